package integration_test

import (
	"context"
	"database/sql"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/leasehold/leasehold/core"
	pgxstore "github.com/leasehold/leasehold/drivers/pgx"
	sqlstore "github.com/leasehold/leasehold/drivers/sql"
	"github.com/leasehold/leasehold/internal/testserver"
)

// countQueries counts the statements pgx sends on a pool, LISTEN included.
type countQueries struct{ n atomic.Int64 }

func (c *countQueries) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	c.n.Add(1)
	return ctx
}

func (c *countQueries) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// BenchmarkTakeover has an election's leader step down (Election.Stop)
// and times its standby's takeover, separate Locks over separate pools,
// on PostgreSQL: the standby on pgx's pool and on database/sql over pgx's
// stdlib, after leading ~100ms and ~1s. Run it with -benchtime=1x (see
// testserver.Takeovers; LEASEHOLD_HANDOVERS sets the count, default 200).
func BenchmarkTakeover(b *testing.B) {
	dsn := testserver.Postgres(b)
	quietB := func(s core.LockStore) *core.Locks {
		l, err := core.New(s, core.WithLogger(slog.New(slog.DiscardHandler)))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = l.Close(context.Background()) })
		return l
	}
	leaderPool := openPool(b, dsn, nil)
	leader := quietB(migrated(b, leaderPool))
	if _, err := leaderPool.Exec(context.Background(), `CREATE TABLE commit_probe (k int PRIMARY KEY, v bigint NOT NULL); INSERT INTO commit_probe VALUES (1, 0)`); err != nil {
		b.Fatal(err)
	}
	var poolCalls countQueries
	standbyPool := openPool(b, dsn, &poolCalls)
	pgxStandby, err := pgxstore.New(standbyPool)
	if err != nil {
		b.Fatal(err)
	}
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		b.Fatal(err)
	}
	db.SetMaxIdleConns(8)
	b.Cleanup(func() { db.Close() })
	dbStandby, err := sqlstore.New(db, sqlstore.Postgres, sqlstore.WithListener(pgxstore.DBListener(db)))
	if err != nil {
		b.Fatal(err)
	}
	for _, s := range []struct {
		name  string
		store core.LockStore
		calls *atomic.Int64
	}{{"pgxpool", pgxStandby, &poolCalls.n}, {"database-sql", dbStandby, nil}} {
		b.Run(s.name, func(b *testing.B) {
			t := testserver.Takeover{
				Leader:  leader,
				Standby: quietB(s.store),
				Key:     "takeover",
				Calls:   s.calls,
				RoundTrip: func() error {
					_, err := leaderPool.Exec(context.Background(), "SELECT 1")
					return err
				},
				Commit: func() error {
					_, err := leaderPool.Exec(context.Background(), "UPDATE commit_probe SET v = v + 1 WHERE k = 1")
					return err
				},
			}
			for _, lead := range []time.Duration{100 * time.Millisecond, time.Second} {
				b.Run(testserver.TakeoverName(lead), func(b *testing.B) {
					for b.Loop() {
						testserver.Takeovers(b, t, lead, testserver.HandoverCount())
					}
				})
			}
		})
	}
}
