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
// (four), with or without options. (The race detector changes allocations, so this test is built
// without it.)
func TestAcquireReleaseAllocations(t *testing.T) {
	l := coretest.NewLocks(t, core.NewMemoryStore())
	ctx := context.Background()
	for _, c := range []struct {
		name string
		opts []core.AcquireOption
	}{
		{"no options", nil},
		{"with options", []core.AcquireOption{core.WithTTL(time.Minute), core.WithWait(time.Second)}},
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
		if allocs > 8 {
			t.Errorf("%s: %v allocations per acquire and release; want at most 8", c.name, allocs)
		}
	}
}
