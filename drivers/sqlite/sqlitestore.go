// Package sqlitestore is leasehold's embedded default: locks in a SQLite
// file, through a pure-Go driver (modernc.org/sqlite, no cgo), with the
// SQLite dialect of [sqlstore].
//
// Import it as
//
//	import sqlitestore "github.com/leasehold/leasehold/drivers/sqlite"
//
// The package is named sqlitestore, not sqlite, so that it never clashes
// with the SQLite driver package the same program may import.
//
// [Open] a file and every process on the host that opens the same file
// shares its locks: the file is in WAL mode, with a busy timeout, so a
// process waits while another writes. SQLite's locking needs one host and a
// local file system: it does not exclude processes on other machines, and
// is unreliable on network file systems (NFS, SMB). For instances on
// several hosts, keep locks in a server (sqlstore with PostgreSQL or MySQL,
// or Redis).
//
// Open(":memory:") keeps locks in this process only, like
// core.MemoryStore, but with the SQL store's semantics.
package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"modernc.org/sqlite" // registers "sqlite" with database/sql
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/leasehold/leasehold/core"
	sqlstore "github.com/leasehold/leasehold/drivers/sql"
)

// BusyTimeout is how long a statement of a Store from [Open] waits for
// another connection's write to finish before it fails with SQLITE_BUSY.
const BusyTimeout = 5 * time.Second

// migrateTimeout bounds the migration Open and New run.
const migrateTimeout = 30 * time.Second

// Store is a [sqlstore.Store] over a SQLite database: a core.LockStore and
// core.Lister. Close it when done.
type Store struct {
	*sqlstore.Store
	db     *sql.DB
	owned  bool // Open made db, so Close closes it
	memory bool
	path   string
}

// Open opens (creating if needed) the SQLite database at path, a file name
// or a "file:" URI, and creates the schema in it. The database is put in
// WAL mode, so readers do not block the writer; with synchronous=FULL, so a
// token handed out survives a power cut (a token handed out twice would
// break fencing); and with a [BusyTimeout].
//
// The Store uses one connection. SQLite runs one writer at a time however
// many connections there are, and waiting for the connection in Go is
// quicker and fairer than SQLite's sleep-and-retry busy handler, whose
// waiters can starve while a busy pool keeps the write lock taken. Each
// statement is one autocommitted write, so it never upgrades a read lock,
// the case that fails at once with SQLITE_BUSY.
//
// path ":memory:" (or any in-memory URI) opens a private database of this
// process, on one connection, since each connection to ":memory:" is a
// database of its own. An empty path is an error matching
// core.ErrInvalidArgument.
func Open(path string, opts ...sqlstore.Option) (*Store, error) {
	dsn, memory, err := dsnFor(path)
	if err != nil {
		return nil, err
	}
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: open %s: %w", path, err)
	}
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	// An in-memory database lives as long as its connection.
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
	if !memory {
		if err := useWAL(db); err != nil {
			db.Close()
			return nil, fmt.Errorf("sqlitestore: open %s: WAL mode: %w", path, err)
		}
	}
	s, err := newStore(db, opts)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("sqlitestore: open %s: %w", path, err)
	}
	s.owned, s.memory, s.path = true, memory, path
	return s, nil
}

// dsnFor turns path into modernc.org/sqlite's DSN, with the pragmas.
func dsnFor(path string) (dsn string, memory bool, err error) {
	if path == "" {
		return "", false, fmt.Errorf("sqlitestore: empty path (use \":memory:\" for a database in memory): %w", core.ErrInvalidArgument)
	}
	params := "_pragma=busy_timeout(" + strconv.FormatInt(BusyTimeout.Milliseconds(), 10) + ")&_txlock=immediate"
	uri := strings.HasPrefix(path, "file:")
	memory = path == ":memory:" || strings.HasPrefix(path, "file::memory:") || uri && strings.Contains(path, "mode=memory")
	if !memory {
		params += "&_pragma=synchronous(FULL)" // WAL mode is the file's: see useWAL
	}
	if !uri {
		// A plain name: escape what a URI would read as query or fragment.
		path = "file:" + strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(path)
	}
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	return path + sep + params, memory, nil
}

// useWAL puts the database file in WAL mode, which then stays the file's.
// The switch needs the file to itself, and SQLite answers it with
// SQLITE_BUSY at once, without waiting, while another connection holds the
// write lock: so does a second process that opens a new file while the
// first creates the schema. The switch is retried until [BusyTimeout].
func useWAL(db *sql.DB) error {
	ctx, cancel := context.WithTimeout(context.Background(), BusyTimeout)
	defer cancel()
	pause := time.Millisecond
	for {
		var mode string
		err := db.QueryRowContext(ctx, "PRAGMA journal_mode=WAL").Scan(&mode)
		if !isBusy(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(pause):
		}
		pause = min(2*pause, 50*time.Millisecond)
	}
}

// isBusy reports whether err is SQLite's SQLITE_BUSY (any extended code).
func isBusy(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_BUSY
}

// New returns a Store over db, an open SQLite handle of any driver, and
// creates the schema in it. The handle's settings are the caller's: give it
// a busy timeout (and WAL mode) if several connections or processes share
// the database. Close does not close db. A nil db is an error matching
// core.ErrInvalidArgument.
func New(db *sql.DB, opts ...sqlstore.Option) (*Store, error) {
	if db == nil {
		return nil, fmt.Errorf("sqlitestore: nil *sql.DB: %w", core.ErrInvalidArgument)
	}
	s, err := newStore(db, opts)
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: %w", err)
	}
	return s, nil
}

// driver is how the engine knows this package, so that the store's errors
// say "sqlitestore:".
var driver = sqlstore.Driver{Name: "sqlitestore"}

func newStore(db *sql.DB, opts []sqlstore.Option) (*Store, error) {
	ctx, cancel := context.WithTimeout(context.Background(), migrateTimeout)
	defer cancel()
	if err := checkVersion(ctx, db); err != nil {
		return nil, err
	}
	st, err := driver.NewFromQuerier(db, sqlstore.SQLite, opts...)
	if err != nil {
		return nil, err
	}
	if err := st.Migrate(ctx); err != nil {
		return nil, err
	}
	return &Store{Store: st, db: db}, nil
}

// checkVersion refuses SQLite before 3.35, which lacks RETURNING.
func checkVersion(ctx context.Context, db *sql.DB) error {
	var v string
	if err := db.QueryRowContext(ctx, "SELECT sqlite_version()").Scan(&v); err != nil {
		return err
	}
	var major, minor int
	if _, err := fmt.Sscanf(v, "%d.%d", &major, &minor); err != nil {
		return fmt.Errorf("SQLite version %q: %w", v, err)
	}
	if major < 3 || major == 3 && minor < 35 {
		return fmt.Errorf("SQLite %s is too old: the store needs 3.35 or later (UPSERT with RETURNING)", v)
	}
	return nil
}

// DB returns the store's database handle.
func (s *Store) DB() *sql.DB { return s.db }

// Close closes the database if [Open] opened it; a Store from [New] leaves
// the caller's handle open.
func (s *Store) Close() error {
	if !s.owned {
		return nil
	}
	return s.db.Close()
}

// String describes the store and the reach of its locks, for start-up logs.
func (s *Store) String() string {
	switch {
	case s.memory:
		return "sqlitestore in memory (excludes callers in this process only)"
	case s.owned:
		return fmt.Sprintf("sqlitestore %s (excludes processes on this host that open the same file)", s.path)
	}
	return "sqlitestore (over a caller's *sql.DB)"
}
