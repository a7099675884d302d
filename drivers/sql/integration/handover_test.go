package integration_test

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leasehold/leasehold/core"
	sqlstore "github.com/leasehold/leasehold/drivers/sql"
	"github.com/leasehold/leasehold/internal/testserver"
)

// countTries counts a waiter's acquire tries.
type countTries struct {
	*sqlstore.Store
	n atomic.Int64
}

func (c *countTries) TryAcquire(ctx context.Context, key, owner string, ttl time.Duration) (int64, bool, time.Duration, error) {
	c.n.Add(1)
	return c.Store.TryAcquire(ctx, key, owner, ttl)
}

// BenchmarkHandoverAfterDeath hands a lock over after its holder died (no
// release, no renewal; a 300ms lease) on MySQL/MariaDB and SQLite, which
// have no notifications: the waiter tries when the lease ends, as its
// refused acquire reported. Run it with -benchtime=1x (see
// testserver.Handovers; LEASEHOLD_HANDOVERS sets the count, default 200).
func BenchmarkHandoverAfterDeath(b *testing.B) {
	for _, be := range backends {
		if be.name != "mysql" && be.name != "sqlite" {
			continue
		}
		b.Run(be.name, func(b *testing.B) {
			store, db := newStore(b, be)
			quietB := func(s core.LockStore, opts ...core.Option) *core.Locks {
				l, err := core.New(s, append([]core.Option{core.WithLogger(slog.New(slog.DiscardHandler))}, opts...)...)
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { _ = l.Close(context.Background()) })
				return l
			}
			counted := &countTries{Store: migrated(b, db, be.dialect)}
			dead := quietB(store, core.WithClock(core.NewManualClock(time.Now())))
			waiter := quietB(counted)
			const key, ttl = "handover", 300 * time.Millisecond
			h := testserver.Handover{
				Hold:  testserver.LockOf(dead, key, core.WithTTL(ttl)),
				Wait:  testserver.LockOf(waiter, key, core.WithWait(time.Minute)),
				Tries: &counted.n,
				RoundTrip: func() error {
					_, err := db.ExecContext(context.Background(), "SELECT 1")
					return err
				},
				Dies: true,
				TTL:  ttl,
			}
			for b.Loop() {
				testserver.Handovers(b, h, 0, testserver.HandoverCount())
			}
		})
	}
}
