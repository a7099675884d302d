package cli

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/leasehold/leasehold/drivers/sqlstore"
	_ "modernc.org/sqlite" // registers the pure-Go "sqlite" database/sql driver
)

// sqliteFile is a SQLite file opened as a lock store: WAL, a busy timeout,
// BEGIN IMMEDIATE, the table migrated. It stands in for
// drivers/sqlitestore.Open until that package lands.
type sqliteFile struct {
	*sqlstore.Store
	db *sql.DB
}

func openSQLiteFile(path string) (*sqliteFile, error) {
	dsn := "file:" + path + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_txlock=immediate"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, err
	}
	s, err := sqlstore.New(db, sqlstore.SQLite)
	if err == nil {
		err = s.Migrate(context.Background())
	}
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("sqlite %s: %w", path, err)
	}
	return &sqliteFile{Store: s, db: db}, nil
}

func (s *sqliteFile) Close() error { return s.db.Close() }
