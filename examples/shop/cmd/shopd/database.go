package main

import (
	"context"
	"database/sql"
	"strings"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver
	"github.com/leasehold/leasehold/core"
	sqlstore "github.com/leasehold/leasehold/drivers/sql"
	sqlitestore "github.com/leasehold/leasehold/drivers/sqlite"
	_ "modernc.org/sqlite" // the "sqlite" database/sql driver
)

// openDatabase opens the shop's database and a lock store in it: the locks
// live in a table next to the shop's own, on the same connection pool.
func openDatabase(ctx context.Context, url string) (*sql.DB, core.LockStore, error) {
	if strings.HasPrefix(url, "postgres://") || strings.HasPrefix(url, "postgresql://") {
		return openPostgres(ctx, url)
	}
	path := strings.TrimPrefix(url, "sqlite://")
	if path == "" {
		path = "shop.db"
	}
	return openSQLite(path)
}

// openPostgres keeps the locks in a table of the application's PostgreSQL
// database.
func openPostgres(ctx context.Context, url string) (*sql.DB, *sqlstore.Store, error) {
	db, err := sql.Open("pgx", url)
	if err != nil {
		return nil, nil, err
	}
	store, err := sqlstore.New(db, sqlstore.Postgres)
	if err != nil {
		db.Close()
		return nil, nil, err
	}
	// Creates the locks table if it is missing. To create it in your own
	// migrations instead, run the statements of store.Schema().
	if err := store.Migrate(ctx); err != nil {
		db.Close()
		return nil, nil, err
	}
	return db, store, nil
}

// openSQLite keeps the shop's tables and its locks in one SQLite file,
// leasehold's embedded default. Instances on one machine that open the same
// file share the locks.
func openSQLite(path string) (*sql.DB, *sqlitestore.Store, error) {
	// WAL lets readers work while a writer writes; the busy timeout makes a
	// writer wait for the file's write lock rather than fail at once.
	db, err := sql.Open("sqlite", "file:"+path+
		"?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_txlock=immediate")
	if err != nil {
		return nil, nil, err
	}
	// Creates the locks table in the shop's database if it is missing.
	store, err := sqlitestore.New(db)
	if err != nil {
		db.Close()
		return nil, nil, err
	}
	return db, store, nil
}
