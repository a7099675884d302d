package integration_test

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/leasehold/leasehold/core"
	"github.com/leasehold/leasehold/internal/testserver"
)

// BenchmarkContention has 16 waiters, each a Locks, take one key in turn
// under sustained contention on PostgreSQL through pgx's pool (holds of
// ~20ms; each waiter asks again as soon as it released, or after a pause
// of ~20ms), and reports
// how the waits were spread and whether a waiter went without (see
// testserver.Contend; 400 acquisitions, or twice LEASEHOLD_HANDOVERS).
// The 16 waiters share 4 pools (4 stores, 4 listening connections), to
// spare the shared server's connections. Run it with -benchtime=1x.
func BenchmarkContention(b *testing.B) {
	dsn := testserver.Postgres(b)
	pools := make([]core.LockStore, 4)
	for i := range pools {
		pools[i] = migrated(b, openPool(b, dsn, nil))
	}
	waiters := make([]*core.Locks, 16)
	for i := range waiters {
		l, err := core.New(pools[i%len(pools)], core.WithLogger(slog.New(slog.DiscardHandler)))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = l.Close(context.Background()) })
		waiters[i] = l
	}
	ping := openPool(b, dsn, nil)
	for _, think := range []time.Duration{0, 20 * time.Millisecond} {
		b.Run(fmt.Sprintf("pause-%v", think), func(b *testing.B) {
			for b.Loop() {
				testserver.Contend(b, waiters, "contended", 20*time.Millisecond, think, 2*testserver.HandoverCount(), func() error {
					_, err := ping.Exec(context.Background(), "SELECT 1")
					return err
				})
			}
		})
	}
}
