package integration_test

import (
	"context"
	"database/sql"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leasehold/leasehold/core"
	pgxstore "github.com/leasehold/leasehold/drivers/pgx"
	sqlstore "github.com/leasehold/leasehold/drivers/sql"
	"github.com/leasehold/leasehold/internal/testserver"
)

// countTries counts a waiter's acquire tries and times the last one.
type countTries struct {
	*sqlstore.Store
	n          atomic.Int64
	mu         sync.Mutex
	start, end time.Time
}

func (c *countTries) TryAcquire(ctx context.Context, key, owner string, ttl time.Duration) (int64, bool, time.Duration, error) {
	c.n.Add(1)
	start := time.Now()
	token, ok, left, err := c.Store.TryAcquire(ctx, key, owner, ttl)
	end := time.Now()
	c.mu.Lock()
	c.start, c.end = start, end
	c.mu.Unlock()
	return token, ok, left, err
}

func (c *countTries) lastTry() (start, end time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.start, c.end
}

// BenchmarkHandover hands a lock from a holder to a waiter, separate Locks
// over separate pools, on PostgreSQL: the waiter on pgx's pool and on
// database/sql over pgx's stdlib, after holds of ~100ms and ~1s, and after
// the holder dies (no release, no renewal; a 300ms lease). Run it with
// -benchtime=1x (see testserver.Handovers; LEASEHOLD_HANDOVERS sets the
// count, default 200).
func BenchmarkHandover(b *testing.B) {
	dsn := testserver.Postgres(b)
	quietB := func(s core.LockStore, opts ...core.Option) *core.Locks {
		l, err := core.New(s, append([]core.Option{core.WithLogger(slog.New(slog.DiscardHandler))}, opts...)...)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = l.Close(context.Background()) })
		return l
	}
	holderPool := openPool(b, dsn, nil)
	holder := quietB(migrated(b, holderPool))
	dead := quietB(migrated(b, holderPool), core.WithClock(core.NewManualClock(time.Now())))
	waiterPool := openPool(b, dsn, nil)
	pgxWaiter, err := pgxstore.New(waiterPool)
	if err != nil {
		b.Fatal(err)
	}
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		b.Fatal(err)
	}
	db.SetMaxIdleConns(8)
	b.Cleanup(func() { db.Close() })
	sqlWaiter, err := sqlstore.New(db, sqlstore.Postgres, sqlstore.WithListener(pgxstore.DBListener(db)))
	if err != nil {
		b.Fatal(err)
	}
	const key, ttl = "handover", 300 * time.Millisecond
	for _, w := range []struct {
		name  string
		store *sqlstore.Store
	}{{"pgxpool", pgxWaiter.Store}, {"database-sql", sqlWaiter}} {
		b.Run(w.name, func(b *testing.B) {
			counted := &countTries{Store: w.store}
			waiter := quietB(counted)
			for _, c := range []struct {
				hold time.Duration
				dies bool
			}{{100 * time.Millisecond, false}, {time.Second, false}, {0, true}} {
				h := testserver.Handover{
					Hold:    testserver.LockOf(holder, key),
					Wait:    testserver.LockOf(waiter, key, core.WithWait(time.Minute)),
					Tries:   &counted.n,
					LastTry: counted.lastTry,
					RoundTrip: func() error {
						_, err := holderPool.Exec(context.Background(), "SELECT 1")
						return err
					},
				}
				if c.dies {
					h.Hold, h.Dies, h.TTL = testserver.LockOf(dead, key, core.WithTTL(ttl)), true, ttl
				}
				b.Run(testserver.HandoverName(c.hold, c.dies), func(b *testing.B) {
					for b.Loop() {
						testserver.Handovers(b, h, c.hold, testserver.HandoverCount())
					}
				})
			}
		})
	}
}
