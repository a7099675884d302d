package integration

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"testing"
	"time"

	atlasmigrate "ariga.io/atlas/sql/migrate"
	"ariga.io/atlas/sql/mysql"
	"ariga.io/atlas/sql/postgres"
	atlasschema "ariga.io/atlas/sql/schema"
	"ariga.io/atlas/sql/sqlite"
	"entgo.io/ent/dialect"
	entsql "entgo.io/ent/dialect/sql"
	_ "github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	_ "modernc.org/sqlite"

	entstore "github.com/leasehold/leasehold/drivers/ent"
	"github.com/leasehold/leasehold/drivers/ent/integration/example/ent"
	"github.com/leasehold/leasehold/internal/testserver"
)

func TestMain(m *testing.M) { os.Exit(testserver.Main(m)) }

// poolSize lets the kit's 32 racing callers really overlap on the server
// rather than queue for connections in database/sql.
const poolSize = 32

// server is a database the tests run on, through ent's driver.
type server struct {
	label   string // Ginkgo label
	dialect string // ent's dialect name
	sqlName string // database/sql driver name
	// database returns the data source name of a fresh, empty database.
	database func(t testing.TB) string
	// ttl is the kit's TTL; 0 is the kit's default.
	ttl time.Duration
}

var servers = []server{
	{"postgres", dialect.Postgres, "pgx", testserver.Postgres, 0},
	{"mysql", dialect.MySQL, "mysql", testserver.MySQL, 0},
	// SQLite runs one writer at a time, and modernc's SQLite is several
	// times slower under the race detector: a call queued behind 31 others
	// can take over a second, and the expiry cases need calls well within
	// TTL/3.
	{"sqlite", dialect.SQLite, "sqlite", sqliteDatabase, 6 * time.Second},
}

// sqliteDatabase is a file in WAL mode that many connections share, with a
// busy timeout, BEGIN IMMEDIATE (a transaction never upgrades a read lock)
// and foreign keys on (ent's migration insists).
func sqliteDatabase(t testing.TB) string {
	return "file:" + filepath.Join(t.TempDir(), "app.db") +
		"?_pragma=foreign_keys(1)&_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_txlock=immediate"
}

// open returns an ent driver over a new pool of poolSize connections to
// dsn, closed when t ends.
func (s server) open(t testing.TB, dsn string) *entsql.Driver {
	t.Helper()
	db, err := sql.Open(s.sqlName, dsn)
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(poolSize)
	db.SetMaxIdleConns(poolSize)
	t.Cleanup(func() { db.Close() })
	return entsql.OpenDB(s.dialect, db)
}

// atlas returns Atlas's driver for the database of drv.
func (s server) atlas(drv *entsql.Driver) atlasmigrate.Driver {
	GinkgoHelper()
	open := map[string]func(atlasschema.ExecQuerier) (atlasmigrate.Driver, error){
		dialect.Postgres: postgres.Open,
		dialect.MySQL:    mysql.Open,
		dialect.SQLite:   sqlite.Open,
	}[s.dialect]
	a, err := open(drv.DB())
	Expect(err).NotTo(HaveOccurred())
	return a
}

// migrate runs the application's ent migration, with leasehold's schema
// added to it, on drv.
func migrate(ctx context.Context, drv dialect.Driver) error {
	locks, err := entstore.NewSchema(drv.Dialect(), "")
	if err != nil {
		return err
	}
	return ent.NewClient(ent.Driver(drv)).Schema.Create(ctx, locks.MigrateOption())
}
