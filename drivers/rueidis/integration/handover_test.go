package integration

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/leasehold/leasehold/core"
	rueidisstore "github.com/leasehold/leasehold/drivers/rueidis"
	"github.com/leasehold/leasehold/internal/testserver"
)

// BenchmarkHandover hands a lock from a holder to a waiter, separate Locks
// on separate clients, on a standalone Redis and a Redis Cluster: after
// holds of ~100ms and ~1s, and after the holder dies (no release, no
// renewal; a 300ms lease). Run it with -benchtime=1x (see
// testserver.Handovers; LEASEHOLD_HANDOVERS sets the count, default 200).
func BenchmarkHandover(b *testing.B) {
	for _, srv := range notifyServers {
		b.Run(srv.name, func(b *testing.B) {
			url, prefix := srv.server(b)
			quietB := func(s core.LockStore, opts ...core.Option) *core.Locks {
				l, err := core.New(s, append([]core.Option{core.WithLogger(slog.New(slog.DiscardHandler))}, opts...)...)
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { _ = l.Close(context.Background()) })
				return l
			}
			waiterClient := &counting{Client: newClient(b, url)}
			waiterStore, err := rueidisstore.New(waiterClient, rueidisstore.WithPrefix(prefix))
			if err != nil {
				b.Fatal(err)
			}
			waiter := quietB(waiterStore)
			holder := quietB(newStore(b, url, prefix))
			dead := quietB(newStore(b, url, prefix), core.WithClock(core.NewManualClock(time.Now())))
			ping := newClient(b, url)
			key := "handover"
			const ttl = 300 * time.Millisecond
			for _, c := range []struct {
				hold time.Duration
				dies bool
			}{{100 * time.Millisecond, false}, {time.Second, false}, {0, true}} {
				h := testserver.Handover{
					Hold:      testserver.LockOf(holder, key),
					Wait:      testserver.LockOf(waiter, key, core.WithWait(time.Minute)),
					Tries:     &waiterClient.n,
					RoundTrip: func() error { return ping.Do(context.Background(), ping.B().Ping().Build()).Error() },
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
