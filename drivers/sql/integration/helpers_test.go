package integration_test

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite"

	"github.com/leasehold/leasehold/core/coretest"
	sqlstore "github.com/leasehold/leasehold/drivers/sql"
	"github.com/leasehold/leasehold/internal/testserver"
)

func TestMain(m *testing.M) { os.Exit(testserver.Main(m)) }

const minute = time.Minute

// poolSize is large enough that 32 racing callers really overlap on the
// server rather than queue for connections in database/sql.
const poolSize = 32

// backend opens a fresh, empty database of one dialect.
type backend struct {
	name    string
	label   string // the Ginkgo label of its server
	dialect sqlstore.Dialect
	open    func(t testing.TB) *sql.DB
}

var backends = []backend{
	{"postgres", "postgres", sqlstore.Postgres, openPostgres},
	{"mysql", "mysql", sqlstore.MySQL, openMySQL},
	{"mysql-interpolated", "mysql", sqlstore.MySQL, openMySQLInterpolated},
	{"sqlite", "sqlite", sqlstore.SQLite, openSQLite},
}

func isSQLite(d sqlstore.Dialect) bool { return d.String() == sqlstore.SQLite.String() }

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
func newStore(t testing.TB, b backend, opts ...sqlstore.Option) (*sqlstore.Store, *sql.DB) {
	t.Helper()
	db := b.open(t)
	return migrated(t, db, b.dialect, opts...), db
}

// migrated returns a migrated store over db.
func migrated(t testing.TB, db *sql.DB, d sqlstore.Dialect, opts ...sqlstore.Option) *sqlstore.Store {
	t.Helper()
	return migrate(t, plain(t, db, d, opts...))
}

// plain returns a store over db, through database/sql.
func plain(t testing.TB, db *sql.DB, d sqlstore.Dialect, opts ...sqlstore.Option) *sqlstore.Store {
	t.Helper()
	s, err := sqlstore.New(db, d, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// migrate migrates s and returns it.
func migrate(t testing.TB, s *sqlstore.Store) *sqlstore.Store {
	t.Helper()
	if err := s.Migrate(context.Background()); err != nil {
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

func mustAcquire(t testing.TB, s *sqlstore.Store, key, owner string, ttl time.Duration) int64 {
	t.Helper()
	return coretest.WantAcquire(t, s, key, owner, ttl, true)
}

func wantAcquire(t testing.TB, s *sqlstore.Store, key, owner string, ttl time.Duration, want bool) int64 {
	t.Helper()
	return coretest.WantAcquire(t, s, key, owner, ttl, want)
}

func wantRenew(t testing.TB, s *sqlstore.Store, key, owner string, ttl time.Duration, want bool) {
	t.Helper()
	coretest.WantRenew(t, s, key, owner, ttl, want)
}

func wantRelease(t testing.TB, s *sqlstore.Store, key, owner string, want bool) {
	t.Helper()
	coretest.WantRelease(t, s, key, owner, want)
}

// dbExecutor is a sqlstore.Transactor written from scratch over database/sql,
// as a driver for another client would write one. With question set it
// takes statements rendered with sqlstore.Question and, on PostgreSQL,
// numbers the placeholders itself, as GORM does: it proves the engine runs
// on any executor and in any placeholder style.
type dbExecutor struct {
	q interface {
		ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
		QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	}
	db       *sql.DB // nil inside a transaction
	dollars  bool    // rewrite ? to $n
	recorder *recorder
}

func (e dbExecutor) text(query string) string {
	if e.recorder != nil {
		e.recorder.add(query)
	}
	if !e.dollars {
		return query
	}
	var b strings.Builder
	n := 0
	for _, r := range query {
		if r == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

func (e dbExecutor) Exec(ctx context.Context, query string, args []any) (sql.Result, error) {
	return e.q.ExecContext(ctx, e.text(query), args...)
}

func (e dbExecutor) Query(ctx context.Context, query string, args []any, scan func(sqlstore.Row) error) error {
	rows, err := e.q.QueryContext(ctx, e.text(query), args...)
	if err != nil {
		return err
	}
	return sqlstore.ScanRows(rows, scan)
}

func (e dbExecutor) InTx(ctx context.Context, fn func(tx sqlstore.Executor) error) error {
	tx, err := e.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	inner := e
	inner.q, inner.db = tx, nil
	if err := fn(inner); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}

// questionStore returns a migrated store of dialect d over db through a
// dbExecutor in the Question style.
func questionStore(t testing.TB, db *sql.DB, d sqlstore.Dialect, opts ...sqlstore.Option) *sqlstore.Store {
	t.Helper()
	return migrate(t, question(t, db, d, opts...))
}

// question returns a store of dialect d over db through a dbExecutor in
// the Question style.
func question(t testing.TB, db *sql.DB, d sqlstore.Dialect, opts ...sqlstore.Option) *sqlstore.Store {
	t.Helper()
	e := dbExecutor{q: db, db: db, dollars: d.String() == sqlstore.Postgres.String()}
	s, err := sqlstore.NewWithExecutor(e, d, append([]sqlstore.Option{sqlstore.WithPlaceholder(sqlstore.Question)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// recorder keeps the statements an executor was given.
type recorder struct {
	mu    sync.Mutex
	stmts []string
}

func (r *recorder) add(q string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stmts = append(r.stmts, q)
}

// last returns the last statement that contains substr.
func (r *recorder) last(substr string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := len(r.stmts) - 1; i >= 0; i-- {
		if strings.Contains(r.stmts[i], substr) {
			return r.stmts[i]
		}
	}
	return ""
}
