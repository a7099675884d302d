package sqlstore

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite"

	"github.com/leasehold/leasehold/internal/testserver"
)

func TestMain(m *testing.M) { os.Exit(testserver.Main(m)) }

// poolSize is large enough that 32 racing callers really overlap on the
// server rather than queue for connections in database/sql.
const poolSize = 24

// backend opens a fresh, empty database of one dialect.
type backend struct {
	name    string
	dialect Dialect
	open    func(t testing.TB) *sql.DB
}

var backends = []backend{
	{"postgres", Postgres, openPostgres},
	{"mysql", MySQL, openMySQL},
	{"mysql-interpolated", MySQL, openMySQLInterpolated},
	{"sqlite", SQLite, openSQLite},
}

func openDB(t testing.TB, driver, dsn string, conns int) *sql.DB {
	t.Helper()
	db, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(conns)
	db.SetMaxIdleConns(conns)
	t.Cleanup(func() { db.Close() })
	return db
}

func openPostgres(t testing.TB) *sql.DB {
	return openDB(t, "pgx", testserver.Postgres(t), poolSize)
}

func openMySQL(t testing.TB) *sql.DB {
	return openDB(t, "mysql", testserver.MySQL(t), poolSize)
}

// openMySQLInterpolated opens MySQL with interpolateParams=true: the driver
// sends each statement as one query instead of prepare, execute, close.
func openMySQLInterpolated(t testing.TB) *sql.DB {
	cfg, err := mysql.ParseDSN(testserver.MySQL(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg.InterpolateParams = true
	return openDB(t, "mysql", cfg.FormatDSN(), poolSize)
}

// sqliteDSN opens path in WAL mode with a busy timeout; BEGIN IMMEDIATE so
// that a transaction never has to upgrade a read lock (SQLITE_BUSY without
// waiting).
func sqliteDSN(path string) string {
	return "file:" + path + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_txlock=immediate"
}

// openSQLite opens a file with several connections, like several
// processes sharing it.
func openSQLite(t testing.TB) *sql.DB {
	return openDB(t, "sqlite", sqliteDSN(filepath.Join(t.TempDir(), "locks.db")), 16)
}

// newStore returns a migrated store of b.
func newStore(t testing.TB, b backend, opts ...Option) (*Store, *sql.DB) {
	t.Helper()
	db := b.open(t)
	s, err := New(db, b.dialect, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	return s, db
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

func mustAcquire(t testing.TB, s *Store, key, owner string, ttl time.Duration) int64 {
	t.Helper()
	tok, ok, err := s.Acquire(ctxT(t), key, owner, ttl)
	if err != nil || !ok || tok <= 0 {
		t.Fatalf("Acquire(%q, %q) = %d, %v, %v; want a positive token, true", key, owner, tok, ok, err)
	}
	return tok
}

func wantAcquire(t testing.TB, s *Store, key, owner string, ttl time.Duration, want bool) int64 {
	t.Helper()
	tok, ok, err := s.Acquire(ctxT(t), key, owner, ttl)
	if err != nil || ok != want {
		t.Fatalf("Acquire(%q, %q) = %d, %v, %v; want %v", key, owner, tok, ok, err, want)
	}
	return tok
}

func wantRenew(t testing.TB, s *Store, key, owner string, ttl time.Duration, want bool) {
	t.Helper()
	ok, err := s.Renew(ctxT(t), key, owner, ttl)
	if err != nil || ok != want {
		t.Fatalf("Renew(%q, %q) = %v, %v; want %v", key, owner, ok, err, want)
	}
}

func wantRelease(t testing.TB, s *Store, key, owner string, want bool) {
	t.Helper()
	ok, err := s.Release(ctxT(t), key, owner)
	if err != nil || ok != want {
		t.Fatalf("Release(%q, %q) = %v, %v; want %v", key, owner, ok, err, want)
	}
}
