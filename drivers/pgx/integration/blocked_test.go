package integration_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/leasehold/leasehold/core"
	pgxstore "github.com/leasehold/leasehold/drivers/pgx"
	"github.com/leasehold/leasehold/internal/testserver"
)

// BenchmarkBlockedWaiter keeps a waiter blocked for a minute
// (LEASEHOLD_BLOCKED) on a key another instance holds and renews, on
// PostgreSQL through pgx's pool, and reports the statements the waiter's
// pool sent a second: its tries, and the LISTEN of its listener. The
// holder's ttl is the default (30s) or 1s, whose lease end, reported to
// the waiter by each refused try, comes every 2/3 to 1s. Run it with
// -benchtime=1x.
func BenchmarkBlockedWaiter(b *testing.B) {
	dsn := testserver.Postgres(b)
	quietB := func(s core.LockStore) *core.Locks {
		l, err := core.New(s, core.WithLogger(slog.New(slog.DiscardHandler)))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = l.Close(context.Background()) })
		return l
	}
	holder := quietB(migrated(b, openPool(b, dsn, nil)))
	var calls countQueries
	waiterStore, err := pgxstore.New(openPool(b, dsn, &calls))
	if err != nil {
		b.Fatal(err)
	}
	waiter := quietB(waiterStore)
	for _, ttl := range []time.Duration{core.DefaultTTL, time.Second} {
		b.Run("ttl-"+ttl.String(), func(b *testing.B) {
			for b.Loop() {
				testserver.Blocked(b, holder, waiter, "blocked-"+ttl.String(), &calls.n, testserver.BlockedFor(), core.WithTTL(ttl))
			}
		})
	}
}
