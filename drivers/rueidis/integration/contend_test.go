package integration

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/leasehold/leasehold/core"
	"github.com/leasehold/leasehold/internal/testserver"
)

// BenchmarkContention has 16 waiters, each a Locks on a client of its
// own, take one key in turn under sustained contention on a standalone
// Redis (holds of ~20ms; each waiter asks again as soon as it released,
// or after a pause of ~20ms), and reports how the waits were spread and whether a waiter
// went without (see testserver.Contend; 400 acquisitions, or twice
// LEASEHOLD_HANDOVERS). Run it with -benchtime=1x.
func BenchmarkContention(b *testing.B) {
	url, prefix := testserver.Redis(b)
	waiters := make([]*core.Locks, 16)
	for i := range waiters {
		l, err := core.New(newStore(b, url, prefix), core.WithLogger(slog.New(slog.DiscardHandler)))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = l.Close(context.Background()) })
		waiters[i] = l
	}
	ping := newClient(b, url)
	for _, think := range []time.Duration{0, 20 * time.Millisecond} {
		b.Run(fmt.Sprintf("pause-%v", think), func(b *testing.B) {
			for b.Loop() {
				testserver.Contend(b, waiters, "contended", 20*time.Millisecond, think, 2*testserver.HandoverCount(),
					func() error { return ping.Do(context.Background(), ping.B().Ping().Build()).Error() })
			}
		})
	}
}
