package faults_test

import (
	"context"
	"database/sql"
	"os"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers "pgx" with database/sql

	"github.com/leasehold/leasehold/core"
	sqlstore "github.com/leasehold/leasehold/drivers/sql"
	"github.com/leasehold/leasehold/internal/testserver"
	"github.com/leasehold/leasehold/internal/testserver/faults"
)

func TestMain(m *testing.M) { os.Exit(testserver.Main(m)) }

// backend is a server kind the scenarios run on.
type backend struct {
	name    string
	start   func(testing.TB) *testserver.Server
	driver  string
	dialect sqlstore.Dialect
	// expiry selects the expiry of the lock of an owner on a key, in
	// microseconds since the epoch.
	expiry string
	// row selects the owner of a key's row and whether its lock is live.
	row string
}

var backends = []backend{
	{"PostgreSQL", testserver.PrivatePostgres, "pgx", sqlstore.Postgres, `SELECT (extract(epoch FROM expires_at) * 1000000)::bigint FROM leasehold_locks WHERE lock_key = $1 AND owner = $2`,
		`SELECT owner, owner IS NOT NULL AND expires_at > clock_timestamp() FROM leasehold_locks WHERE lock_key = $1`},
	{"MariaDB", testserver.PrivateMariaDB, "mysql", sqlstore.MySQL, "SELECT TIMESTAMPDIFF(MICROSECOND, '1970-01-01', expires_at) FROM leasehold_locks WHERE lock_key = ? AND owner = ?",
		"SELECT owner, owner IS NOT NULL AND expires_at > UTC_TIMESTAMP(6) FROM leasehold_locks WHERE lock_key = ?"},
}

// forEachBackend runs f as a parallel subtest per backend, on a private
// server of its own.
func forEachBackend(t *testing.T, f func(t *testing.T, b backend, srv *testserver.Server)) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			f(t, b, b.start(t))
		})
	}
}

// openStore opens a pool on dsn and a migrated store over it, closed when
// the test ends.
func openStore(t testing.TB, b backend, dsn string) (*sqlstore.Store, *sql.DB) {
	t.Helper()
	db, err := sql.Open(b.driver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(64)
	db.SetMaxIdleConns(64)
	t.Cleanup(func() { db.Close() })
	store, err := sqlstore.New(db, b.dialect)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := store.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	return store, db
}

// target is the store of b on srv, for the scenarios of package faults.
func target(t testing.TB, b backend, srv *testserver.Server) faults.Target {
	_, direct := openStore(t, b, srv.DSN)
	return faults.Target{
		Name:   b.name,
		Server: srv,
		Open: func(t testing.TB, addr string) core.LockStore {
			store, _ := openStore(t, b, srv.DSNAt(addr))
			return store
		},
		Expiry: func(ctx context.Context, key, owner string) (time.Time, error) {
			var micros int64
			err := direct.QueryRowContext(ctx, b.expiry, key, owner).Scan(&micros)
			return time.UnixMicro(micros), err
		},
	}
}
