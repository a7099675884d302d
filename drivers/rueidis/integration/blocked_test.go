package integration

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/leasehold/leasehold/core"
	rueidisstore "github.com/leasehold/leasehold/drivers/rueidis"
	"github.com/leasehold/leasehold/internal/testserver"
)

// countingAll counts Receive (the SSUBSCRIBE of a subscription) too.
type countingAll struct{ *counting }

func (c countingAll) Receive(ctx context.Context, subscribe rueidis.Completed, fn func(rueidis.PubSubMessage)) error {
	c.n.Add(1)
	return c.Client.Receive(ctx, subscribe, fn)
}

// BenchmarkBlockedWaiter keeps a waiter blocked for a minute
// (LEASEHOLD_BLOCKED) on a key another instance holds and renews, on a
// standalone Redis, and reports the waiter's client calls a second: its
// tries, and the SSUBSCRIBE of its subscription. The holder's ttl is the
// default (30s) or 1s, whose lease end, reported to the waiter by each
// refused try, comes every 2/3 to 1s. Run it with -benchtime=1x.
func BenchmarkBlockedWaiter(b *testing.B) {
	url, prefix := testserver.Redis(b)
	quietB := func(s core.LockStore) *core.Locks {
		l, err := core.New(s, core.WithLogger(slog.New(slog.DiscardHandler)))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = l.Close(context.Background()) })
		return l
	}
	holder := quietB(newStore(b, url, prefix))
	client := countingAll{&counting{Client: newClient(b, url)}}
	waiterStore, err := rueidisstore.New(client, rueidisstore.WithPrefix(prefix))
	if err != nil {
		b.Fatal(err)
	}
	waiter := quietB(waiterStore)
	for _, ttl := range []time.Duration{core.DefaultTTL, time.Second} {
		b.Run("ttl-"+ttl.String(), func(b *testing.B) {
			for b.Loop() {
				testserver.Blocked(b, holder, waiter, "blocked-"+ttl.String(), &client.n, testserver.BlockedFor(), core.WithTTL(ttl))
			}
		})
	}
}
