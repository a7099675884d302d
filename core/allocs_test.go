//go:build !race

package core_test

import (
	"context"
	"testing"

	"github.com/leasehold/leasehold/core"
	"github.com/leasehold/leasehold/core/coretest"
)

// TestAcquireReleaseAllocations keeps the core's own cost of a lock
// small: an acquire and a release on the memory store allocate the Lock,
// its context (two), its owner id and the release's bounded context
// (four). (The race detector changes allocations, so this test is built
// without it.)
func TestAcquireReleaseAllocations(t *testing.T) {
	l := coretest.NewLocks(t, core.NewMemoryStore())
	ctx := context.Background()
	allocs := testing.AllocsPerRun(1000, func() {
		lk, err := l.Acquire(ctx, "k")
		if err != nil {
			t.Fatal(err)
		}
		if err := lk.Release(ctx); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 8 {
		t.Fatalf("%v allocations per acquire and release; want at most 8", allocs)
	}
}
