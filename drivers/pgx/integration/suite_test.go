package integration_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	. "github.com/onsi/ginkgo/v2"

	"github.com/leasehold/leasehold/conformance"
	"github.com/leasehold/leasehold/conformance/ginkgokit"
	"github.com/leasehold/leasehold/core"
	pgxstore "github.com/leasehold/leasehold/drivers/pgx"
	sqlstore "github.com/leasehold/leasehold/drivers/sql"
	"github.com/leasehold/leasehold/internal/testserver"
)

func TestMain(m *testing.M) { os.Exit(testserver.Main(m)) }

// TestSuite runs the conformance kit on PostgreSQL through pgx's native
// pool, 32 callers per race on a pool of 32 connections. The database and
// the pool are created, and migrated, once; each store the kit asks for
// (one per case, racing caller and instance) is a new Store over the pool:
// a pool per store would open more connections than the server allows.
func TestSuite(t *testing.T) { testserver.RunSuite(t, "pgxstore") }

var _ = Describe("pgxstore", Label("postgres"), Ordered, func() {
	var pool *pgxpool.Pool
	BeforeAll(func() {
		pool = openPool(GinkgoTB(), testserver.Postgres(GinkgoTB()), nil)
		migrated(GinkgoTB(), pool)
	})
	ginkgokit.Specs(func(t testing.TB) core.LockStore {
		s, err := pgxstore.New(pool)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}, conformance.Options{Callers: 32})
})

// openPool opens a pool of 32 connections on dsn, with tracer if not nil.
func openPool(t testing.TB, dsn string, tracer pgx.QueryTracer) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 32
	cfg.ConnConfig.Tracer = tracer
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

func migrated(t testing.TB, db pgxstore.DB, opts ...sqlstore.Option) pgxstore.Store {
	t.Helper()
	s, err := pgxstore.New(db, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	return s
}

// tracer records the statements pgx sends.
type tracer struct {
	mu    sync.Mutex
	stmts []string
}

func (tr *tracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.stmts = append(tr.stmts, data.SQL)
	return ctx
}

func (tr *tracer) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (tr *tracer) take() []string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	out := tr.stmts
	tr.stmts = nil
	return out
}

// Every operation is one statement on the pool, seen by the application's
// tracer: the floor of one round trip each, also after a second idle.
func TestOneStatementPerOperation(t *testing.T) {
	tr := &tracer{}
	pool := openPool(t, testserver.Postgres(t), tr)
	s := migrated(t, pool)
	ctx := context.Background()
	tr.take()
	check := func(what, want string) {
		t.Helper()
		got := tr.take()
		if len(got) != 1 || !strings.Contains(got[0], want) {
			t.Fatalf("%s sent %q; want one statement containing %q", what, got, want)
		}
	}
	if _, ok, err := s.Acquire(ctx, "k", "o", time.Minute); err != nil || !ok {
		t.Fatal(ok, err)
	}
	check("Acquire", "INSERT INTO")
	time.Sleep(1100 * time.Millisecond) // idle past pgx stdlib's ping threshold
	if ok, err := s.Renew(ctx, "k", "o", time.Minute); err != nil || !ok {
		t.Fatal(ok, err)
	}
	check("Renew after a second idle", "SET expires_at")
	if _, ok, err := s.Acquire(ctx, "k", "other", time.Minute); err != nil || ok {
		t.Fatal(ok, err)
	}
	check("a failed Acquire", "INSERT INTO")
	if ok, err := s.Release(ctx, "k", "o"); err != nil || !ok {
		t.Fatal(ok, err)
	}
	check("Release", "SET owner = NULL")
}

func TestRefusals(t *testing.T) {
	pool := openPool(t, testserver.Postgres(t), nil)
	tx, err := pool.Begin(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	if _, err := pgxstore.New(tx); !errors.Is(err, sqlstore.ErrTransaction) || !errors.Is(err, core.ErrInvalidArgument) {
		t.Fatalf("New(pgx.Tx) = %v; want ErrTransaction", err)
	}
	if _, err := pgxstore.New(nil); !errors.Is(err, core.ErrInvalidArgument) {
		t.Fatalf("New(nil) = %v", err)
	}
	s, err := pgxstore.New(pool)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Acquire(context.Background(), "k", "o", time.Minute); !errors.Is(err, sqlstore.ErrNotMigrated) || !strings.HasPrefix(err.Error(), "pgxstore: ") {
		t.Fatalf("Acquire before Migrate = %v; want ErrNotMigrated", err)
	}
	if got := s.String(); got != "pgxstore (PostgreSQL, table leasehold_locks)" {
		t.Fatalf("String() = %q", got)
	}
}

// Concurrent migrations of a fresh database all succeed (the engine's
// advisory lock, in a pgx transaction).
func TestConcurrentMigrate(t *testing.T) {
	pool := openPool(t, testserver.Postgres(t), nil)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			s, err := pgxstore.New(pool)
			if err == nil {
				err = s.Migrate(context.Background())
			}
			if err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
}
