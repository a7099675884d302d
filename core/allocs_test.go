//go:build !race

package core_test

import (
	"context"
	"testing"
	"time"

	"github.com/leasehold/leasehold/core"
	"github.com/leasehold/leasehold/core/coretest"
)

// TestAcquireReleaseAllocations keeps the core's own cost of a lock
// small: an acquire and a release on the memory store allocate the Lock,
// its context (two), its owner id and the release's bounded context
// (four), with or without a ttl; a waiting acquire subscribes too. (The race detector changes allocations, so this test is built
// without it.)
func TestAcquireReleaseAllocations(t *testing.T) {
	l := coretest.NewLocks(t, core.NewMemoryStore())
	ctx := context.Background()
	for _, c := range []struct {
		name string
		opts []core.AcquireOption
		max  float64
	}{
		{"no options", nil, 8},
		{"with a ttl", []core.AcquireOption{core.WithTTL(time.Minute)}, 8},
		// A waiting acquire subscribes before its first try, even when
		// the key is free: its waiter, and its registrations in the
		// instance and in the store (a Notifier).
		{"with a wait", []core.AcquireOption{core.WithTTL(time.Minute), core.WithWait(time.Second)}, 20},
	} {
		allocs := testing.AllocsPerRun(1000, func() {
			lk, err := l.Acquire(ctx, "k", c.opts...)
			if err != nil {
				t.Fatal(err)
			}
			if err := lk.Release(ctx); err != nil {
				t.Fatal(err)
			}
		})
		if allocs > c.max {
			t.Errorf("%s: %v allocations per acquire and release; want at most %v", c.name, allocs, c.max)
		}
	}
}
