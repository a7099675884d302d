package integration_test

import (
	"context"
	"database/sql"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	gsqlite "github.com/glebarez/sqlite"
	"gorm.io/driver/mysql"
	"gorm.io/driver/postgres"
	"gorm.io/driver/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/leasehold/leasehold/core/coretest"
	gormstore "github.com/leasehold/leasehold/drivers/gorm"
	sqlstore "github.com/leasehold/leasehold/drivers/sql"
	"github.com/leasehold/leasehold/internal/testserver"
)

func TestMain(m *testing.M) { os.Exit(testserver.Main(m)) }

// poolSize is large enough that the kit's 32 racing callers really overlap
// on the server rather than queue for connections in database/sql.
const poolSize = 32

// backend is a database and a GORM dialector for it.
type backend struct {
	name    string
	label   string // the Ginkgo label of its server
	dialect sqlstore.Dialect
	driver  string // the database/sql driver the dialector uses
	// dsn returns the DSN of a new, empty database, removed when t ends.
	dsn func(t testing.TB) string
	// open is the dialector as applications write it, from a DSN; conn is
	// the same dialector over a pool the test made (Config.Conn).
	open func(dsn string) gorm.Dialector
	conn func(pool gorm.ConnPool) gorm.Dialector
	// ttl is the conformance kit's TTL, if its default is too short.
	ttl time.Duration
}

// sqliteTTL is the kit's TTL on SQLite, which runs one writer at a time:
// while the kit's races and waiting cases run together, a call queued
// behind 31 others can take over a second (more in the pure-Go build under
// the race detector), and the expiry cases need calls well within TTL/3.
const sqliteTTL = 6 * time.Second

var backends = []backend{
	{
		name: "postgres", label: "postgres", dialect: sqlstore.Postgres, driver: "pgx",
		dsn:  testserver.Postgres,
		open: postgres.Open,
		conn: func(p gorm.ConnPool) gorm.Dialector { return postgres.New(postgres.Config{Conn: p}) },
	},
	{
		name: "mysql", label: "mysql", dialect: sqlstore.MySQL, driver: "mysql",
		dsn:  testserver.MySQL,
		open: mysql.Open,
		conn: func(p gorm.ConnPool) gorm.Dialector { return mysql.New(mysql.Config{Conn: p}) },
	},
	{
		// gorm.io/driver/sqlite: mattn/go-sqlite3, cgo.
		name: "sqlite-mattn", label: "sqlite", dialect: sqlstore.SQLite, driver: sqlite.DriverName,
		dsn: func(t testing.TB) string {
			return "file:" + filepath.Join(t.TempDir(), "locks.db") + "?_busy_timeout=10000&_journal_mode=WAL&_txlock=immediate"
		},
		open: sqlite.Open,
		conn: func(p gorm.ConnPool) gorm.Dialector { return &sqlite.Dialector{Conn: p} },
		ttl:  sqliteTTL,
	},
	{
		// github.com/glebarez/sqlite: a pure-Go SQLite, no cgo.
		name: "sqlite-glebarez", label: "sqlite", dialect: sqlstore.SQLite, driver: gsqlite.DriverName,
		dsn: func(t testing.TB) string {
			return "file:" + filepath.Join(t.TempDir(), "locks.db") + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_txlock=immediate"
		},
		open: gsqlite.Open,
		conn: func(p gorm.ConnPool) gorm.Dialector { return &gsqlite.Dialector{Conn: p} },
		ttl:  sqliteTTL,
	},
}

// quiet keeps GORM's default logger from printing the errors that tests
// provoke on purpose.
func quiet() *gorm.Config { return &gorm.Config{Logger: logger.Discard} }

// pgParam adds a run-time parameter to a PostgreSQL DSN, a URL or
// key=value pairs; pgx sends it when it connects.
func pgParam(dsn, key, value string) string {
	u, err := url.Parse(dsn)
	if err != nil || u.Scheme == "" {
		return dsn + " " + key + "=" + value
	}
	q := u.Query()
	q.Set(key, value)
	u.RawQuery = q.Encode()
	return u.String()
}

// openDSN opens dsn through b's dialector, as an application does, with a
// pool of poolSize connections, closed when t ends.
func openDSN(t testing.TB, b backend, dsn string, cfg *gorm.Config) *gorm.DB {
	t.Helper()
	if cfg == nil {
		cfg = quiet()
	}
	db, err := gorm.Open(b.open(dsn), cfg)
	if err != nil {
		t.Fatalf("%s: gorm.Open: %v", b.name, err)
	}
	pool, err := db.DB()
	if err != nil {
		t.Fatal(err)
	}
	pool.SetMaxOpenConns(poolSize)
	pool.SetMaxIdleConns(poolSize)
	t.Cleanup(func() { pool.Close() })
	return db
}

// open opens a new, empty database of b.
func open(t testing.TB, b backend, cfg *gorm.Config) *gorm.DB {
	t.Helper()
	return openDSN(t, b, b.dsn(t), cfg)
}

// openPool opens dsn with b's database/sql driver, closed when t ends.
func openPool(t testing.TB, b backend, dsn string) *sql.DB {
	t.Helper()
	pool, err := sql.Open(b.driver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	pool.SetMaxOpenConns(poolSize)
	pool.SetMaxIdleConns(poolSize)
	t.Cleanup(func() { pool.Close() })
	return pool
}

// openConn opens a *gorm.DB of b over pool.
func openConn(t testing.TB, b backend, pool gorm.ConnPool, cfg *gorm.Config) *gorm.DB {
	t.Helper()
	if cfg == nil {
		cfg = quiet()
	}
	db, err := gorm.Open(b.conn(pool), cfg)
	if err != nil {
		t.Fatalf("%s: gorm.Open: %v", b.name, err)
	}
	return db
}

// newStore returns a store over db.
func newStore(t testing.TB, db *gorm.DB, opts ...sqlstore.Option) *gormstore.Store {
	t.Helper()
	s, err := gormstore.New(db, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// migrated returns a store over db, with its schema created.
func migrated(t testing.TB, db *gorm.DB, opts ...sqlstore.Option) *gormstore.Store {
	t.Helper()
	s := newStore(t, db, opts...)
	if err := s.Migrate(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	return s
}

func forEachBackend(t *testing.T, f func(t *testing.T, b backend)) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			f(t, b)
		})
	}
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func wantAcquire(t testing.TB, s *gormstore.Store, key, owner string, want bool) int64 {
	t.Helper()
	return coretest.WantAcquire(t, s, key, owner, time.Minute, want)
}

func wantRenew(t testing.TB, s *gormstore.Store, key, owner string, want bool) {
	t.Helper()
	coretest.WantRenew(t, s, key, owner, time.Minute, want)
}

func wantRelease(t testing.TB, s *gormstore.Store, key, owner string, want bool) {
	t.Helper()
	coretest.WantRelease(t, s, key, owner, want)
}
