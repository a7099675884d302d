package testserver

import (
	"context"
	"errors"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leasehold/leasehold/core"
)

// BlockedFor is how long [Blocked] keeps a waiter blocked: a minute, or
// LEASEHOLD_BLOCKED (a Go duration).
func BlockedFor() time.Duration {
	if d, err := time.ParseDuration(os.Getenv("LEASEHOLD_BLOCKED")); err == nil && d > 0 {
		return d
	}
	return time.Minute
}

// Blocked has holder take key with holdOpts (and keep it, renewing it) and
// waiter wait for it for d, and reports what the blocked waiter cost the
// store: calls counts its store calls (reset once the key is held), as
// calls-per-s and calls. The waiter must not get the key. It sets b.N
// aside: run it with -benchtime=1x.
func Blocked(b *testing.B, holder, waiter *core.Locks, key string, calls *atomic.Int64, d time.Duration, holdOpts ...core.AcquireOption) {
	b.Helper()
	ctx := context.Background()
	held, err := holder.Acquire(ctx, key, holdOpts...)
	if err != nil {
		b.Fatalf("holder: %v", err)
	}
	defer func() { _ = held.Release(ctx) }()
	calls.Store(0)
	start := time.Now()
	lk, err := waiter.Acquire(ctx, key, core.WithWait(d))
	took := time.Since(start)
	if err == nil {
		_ = lk.Release(ctx)
		b.Fatalf("the waiter took a held key after %v", took)
	}
	if !errors.Is(err, core.ErrNotAcquired) {
		b.Fatalf("waiter: %v", err)
	}
	n := calls.Load()
	b.ReportMetric(float64(n), "calls")
	b.ReportMetric(float64(n)/took.Seconds(), "calls-per-s")
	b.Logf("a waiter blocked %v on a held key made %d store calls: %.2f a second", took.Round(time.Millisecond), n, float64(n)/took.Seconds())
}
