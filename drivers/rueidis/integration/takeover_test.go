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

// BenchmarkTakeover has an election's leader step down (Election.Stop)
// and times its standby's takeover, separate Locks on separate clients,
// on a standalone Redis and a Redis Cluster, after leading ~100ms and ~1s.
// Run it with -benchtime=1x (see testserver.Takeovers; LEASEHOLD_HANDOVERS
// sets the count, default 200).
func BenchmarkTakeover(b *testing.B) {
	for _, srv := range notifyServers {
		b.Run(srv.name, func(b *testing.B) {
			url, prefix := srv.server(b)
			quietB := func(s core.LockStore) *core.Locks {
				l, err := core.New(s, core.WithLogger(slog.New(slog.DiscardHandler)))
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { _ = l.Close(context.Background()) })
				return l
			}
			standbyClient := &counting{Client: newClient(b, url)}
			standbyStore, err := rueidisstore.New(standbyClient, rueidisstore.WithPrefix(prefix))
			if err != nil {
				b.Fatal(err)
			}
			ping := newClient(b, url)
			t := testserver.Takeover{
				Leader:    quietB(newStore(b, url, prefix)),
				Standby:   quietB(standbyStore),
				Key:       "takeover",
				Calls:     &standbyClient.n,
				RoundTrip: func() error { return ping.Do(context.Background(), ping.B().Ping().Build()).Error() },
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
