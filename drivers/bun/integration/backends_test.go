package integration

import (
	"database/sql"
	"os"
	"path/filepath"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/mysqldialect"
	"github.com/uptrace/bun/dialect/pgdialect"
	"github.com/uptrace/bun/dialect/sqlitedialect"
	"github.com/uptrace/bun/driver/pgdriver"
	"github.com/uptrace/bun/schema"
	_ "modernc.org/sqlite" // registers "sqlite" with database/sql

	sqlstore "github.com/leasehold/leasehold/drivers/sql"
	"github.com/leasehold/leasehold/internal/testserver"
)

func TestMain(m *testing.M) { os.Exit(testserver.Main(m)) }

// TestSuite runs the Ginkgo specs: per database, the conformance kit and
// the driver's own specs.
func TestSuite(t *testing.T) { testserver.RunSuite(t, "bunstore") }

// poolSize lets the kit's 32 racing callers hold a connection each, so
// their statements overlap on the server instead of queueing in
// database/sql.
const poolSize = 32

// backend is one database reached through one of bun's dialects and
// database/sql drivers.
type backend struct {
	name  string // in spec and benchmark names
	label string // the server's Ginkgo label
	// dialect is the SQL engine's dialect bun's should map to.
	dialect sqlstore.Dialect
	// database returns the DSN of a new, empty database.
	database func(t testing.TB) string
	// open opens a pool of poolSize connections to dsn through bun, closed
	// when t ends.
	open func(t testing.TB, dsn string) *bun.DB
	// bunDialect returns a new bun dialect of the backend: bun.NewDB
	// initialises the dialect it is given, so a dialect is never shared.
	bunDialect func() schema.Dialect
	// reference opens dsn through database/sql with bound arguments, which
	// bun's formatting does not touch: the store the keys are checked
	// against.
	reference func(t testing.TB, dsn string) *sql.DB
	// hostile, if set, opens dsn through bun with the session setting under
	// which bun's plain '...' literals would read back as other strings.
	hostile func(t testing.TB, dsn string) *bun.DB
	// benchOpen opens dsn as open does, with commits that do not wait for
	// the disk where the session can choose.
	benchOpen func(t testing.TB, dsn string) *bun.DB
	// hookLiteral is how the key "hook" appears in the formatted SQL.
	hookLiteral string
}

var backends = []backend{
	{
		name: "PostgreSQL through bun's pgdriver", label: "postgres", dialect: sqlstore.Postgres,
		database: testserver.Postgres,
		open: func(t testing.TB, dsn string) *bun.DB {
			return bunDB(t, sql.OpenDB(pgdriver.NewConnector(pgdriver.WithDSN(dsn))), pgdialect.New())
		},
		benchOpen: func(t testing.TB, dsn string) *bun.DB {
			c := pgdriver.NewConnector(pgdriver.WithDSN(dsn), pgdriver.WithConnParams(map[string]any{"synchronous_commit": "off"}))
			return bunDB(t, sql.OpenDB(c), pgdialect.New())
		},
		bunDialect:  func() schema.Dialect { return pgdialect.New() },
		reference:   openPgx,
		hookLiteral: `E'hook'`,
	},
	{
		name: "PostgreSQL through pgx's stdlib", label: "postgres", dialect: sqlstore.Postgres,
		database: testserver.Postgres,
		open: func(t testing.TB, dsn string) *bun.DB {
			return bunDB(t, openPgx(t, dsn), pgdialect.New())
		},
		benchOpen: func(t testing.TB, dsn string) *bun.DB {
			return bunDB(t, pgxWith(t, dsn, "synchronous_commit", "off"), pgdialect.New())
		},
		bunDialect: func() schema.Dialect { return pgdialect.New() },
		reference:  openPgx,
		// pgdriver refuses to connect with standard_conforming_strings off;
		// pgx does not.
		hostile: func(t testing.TB, dsn string) *bun.DB {
			return bunDB(t, pgxWith(t, dsn, "standard_conforming_strings", "off"), pgdialect.New())
		},
		hookLiteral: `E'hook'`,
	},
	{
		name: "MySQL through go-sql-driver", label: "mysql", dialect: sqlstore.MySQL,
		database: testserver.MySQL,
		open: func(t testing.TB, dsn string) *bun.DB {
			return bunDB(t, sqlDB(t, "mysql", dsn), mysqldialect.New())
		},
		benchOpen: func(t testing.TB, dsn string) *bun.DB {
			return bunDB(t, sqlDB(t, "mysql", dsn), mysqldialect.New())
		},
		bunDialect: func() schema.Dialect { return mysqldialect.New() },
		reference:  func(t testing.TB, dsn string) *sql.DB { return sqlDB(t, "mysql", dsn) },
		hostile: func(t testing.TB, dsn string) *bun.DB {
			cfg, err := mysql.ParseDSN(dsn)
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Params == nil {
				cfg.Params = map[string]string{}
			}
			// The driver sends SET sql_mode=<value> on each new connection.
			cfg.Params["sql_mode"] = "CONCAT(@@sql_mode, ',NO_BACKSLASH_ESCAPES')"
			return bunDB(t, sqlDB(t, "mysql", cfg.FormatDSN()), mysqldialect.New())
		},
		hookLiteral: `X'686f6f6b'`,
	},
	{
		name: "SQLite through modernc", label: "sqlite", dialect: sqlstore.SQLite,
		database: func(t testing.TB) string {
			// WAL and a busy timeout, as several processes sharing a file
			// would use it; BEGIN IMMEDIATE, so that a transaction never
			// has to upgrade a read lock.
			return "file:" + filepath.Join(t.TempDir(), "locks.db") +
				"?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_txlock=immediate"
		},
		open: func(t testing.TB, dsn string) *bun.DB {
			return bunDB(t, sqlDB(t, "sqlite", dsn), sqlitedialect.New())
		},
		benchOpen: func(t testing.TB, dsn string) *bun.DB {
			return bunDB(t, sqlDB(t, "sqlite", dsn+"&_pragma=synchronous(OFF)"), sqlitedialect.New())
		},
		bunDialect:  func() schema.Dialect { return sqlitedialect.New() },
		reference:   func(t testing.TB, dsn string) *sql.DB { return sqlDB(t, "sqlite", dsn) },
		hookLiteral: `'hook'`,
	},
}

func openPgx(t testing.TB, dsn string) *sql.DB { return sqlDB(t, "pgx", dsn) }

// pgxWith opens dsn through pgx's stdlib with a session setting.
func pgxWith(t testing.TB, dsn, setting, value string) *sql.DB {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.RuntimeParams[setting] = value
	db := stdlib.OpenDB(*cfg)
	t.Cleanup(func() { db.Close() })
	return db
}

func sqlDB(t testing.TB, driver, dsn string) *sql.DB {
	db, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(poolSize)
	db.SetMaxIdleConns(poolSize)
	t.Cleanup(func() { db.Close() })
	return db
}

// bunDB wraps sqldb, with a pool of poolSize, closed when t ends.
func bunDB(t testing.TB, sqldb *sql.DB, d schema.Dialect) *bun.DB {
	sqldb.SetMaxOpenConns(poolSize)
	sqldb.SetMaxIdleConns(poolSize)
	db := bun.NewDB(sqldb, d)
	t.Cleanup(func() { db.Close() })
	return db
}
