package core_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/leasehold/leasehold/core"
	"github.com/leasehold/leasehold/core/coretest"
)

// The fast path of Acquire and Release skips work it does not need
// (contexts that cannot end, debug logs that are off, a new timer per
// lock); these tests pin what it must still do. (TestOwnerIDs checks the
// cheaper owner ids.)

// TestDebugLogsAcquireAndRelease: with debug logs on, an acquisition and a
// release are logged with their key and token.
func TestDebugLogsAcquireAndRelease(t *testing.T) {
	clock := core.NewManualClock(t0)
	var buf coretest.LogBuffer
	l := coretest.NewLocks(t, core.NewMemoryStore(core.WithMemoryClock(clock)), core.WithClock(clock), core.WithLogger(buf.Logger()))
	lk := mustAcquire(t, l, "k")
	if err := lk.Release(bg); err != nil {
		t.Fatal(err)
	}
	for _, msg := range []string{"lock acquired", "lock released"} {
		if n := buf.Count("level=DEBUG", msg, "key=k", "token=1"); n != 1 {
			t.Fatalf("%d %q lines; log:\n%s", n, msg, buf.String())
		}
	}
}

// TestLockContextCarriesParentValues: the lock's context has the lock and
// every value of the context given to Acquire, and ends with it.
func TestLockContextCarriesParentValues(t *testing.T) {
	type key struct{}
	clock := core.NewManualClock(t0)
	store := core.NewMemoryStore(core.WithMemoryClock(clock))
	l := coretest.NewLocks(t, store, core.WithClock(clock))
	for _, cancellable := range []bool{false, true} {
		parent := context.WithValue(context.Background(), key{}, "v")
		cancel := context.CancelFunc(func() {})
		if cancellable {
			parent, cancel = context.WithCancel(parent)
		}
		defer cancel()
		lk, err := l.Acquire(parent, "k")
		if err != nil {
			t.Fatal(err)
		}
		if core.LockFromContext(lk.Context()) != lk || lk.Context().Value(key{}) != "v" {
			t.Fatalf("cancellable %v: the lock's context lacks the lock or the parent's value", cancellable)
		}
		if !cancellable {
			if err := lk.Release(bg); err != nil {
				t.Fatal(err)
			}
			continue
		}
		cancel()
		eventually(t, "the release when Acquire's context ends", func() bool { return holder(t, store, "k") == "" })
		if !errors.Is(context.Cause(lk.Context()), context.Canceled) && !errors.Is(context.Cause(lk.Context()), core.ErrReleased) {
			t.Fatalf("cause %v after Acquire's context ended", context.Cause(lk.Context()))
		}
	}
}

// cancellingStore cancels the caller's context as its Release begins, and
// notes what the Release's context says then.
type cancellingStore struct {
	core.LockStore
	cancel      context.CancelFunc
	err         error
	hasDeadline bool
}

func (s *cancellingStore) Release(ctx context.Context, key, owner string) (bool, error) {
	s.cancel()
	s.err = ctx.Err()
	_, s.hasDeadline = ctx.Deadline()
	return s.LockStore.Release(ctx, key, owner)
}

// TestReleaseOutlivesItsContext: a release goes on when the caller's
// context ends meanwhile, and is bounded in time either way.
func TestReleaseOutlivesItsContext(t *testing.T) {
	clock := core.NewManualClock(t0)
	mem := core.NewMemoryStore(core.WithMemoryClock(clock))
	store := &cancellingStore{LockStore: mem}
	l := coretest.NewLocks(t, store, core.WithClock(clock))
	for _, cancellable := range []bool{false, true} {
		ctx, cancel := context.Background(), context.CancelFunc(func() {})
		if cancellable {
			ctx, cancel = context.WithCancel(ctx)
		}
		store.cancel = cancel
		lk := mustAcquire(t, l, "k")
		if err := lk.Release(ctx); err != nil || store.err != nil || !store.hasDeadline || holder(t, mem, "k") != "" {
			t.Fatalf("cancellable %v: Release = %v; the store saw ctx error %v, deadline %v; want the release done, bounded, whatever the caller's ctx does", cancellable, err, store.err, store.hasDeadline)
		}
	}
}

// TestSchedulerTimerFollowsItsLocks: one timer serves the instance's locks
// however often they come and go, and none is left once they are gone.
func TestSchedulerTimerFollowsItsLocks(t *testing.T) {
	clock := core.NewManualClock(t0)
	l := coretest.NewLocks(t, core.NewMemoryStore(core.WithMemoryClock(clock)), core.WithClock(clock))
	for i := range 50 {
		a := mustAcquire(t, l, "a")
		b := mustAcquire(t, l, "b", core.WithTTL(3*time.Second))
		if n := clock.Pending(); n != 1 {
			t.Fatalf("round %d: %d timers pending for two locks; want one", i, n)
		}
		clock.Advance(time.Second) // b renews
		if err := b.Release(bg); err != nil {
			t.Fatal(err)
		}
		if err := a.Release(bg); err != nil {
			t.Fatal(err)
		}
		if n := clock.Pending(); n != 0 {
			t.Fatalf("round %d: %d timers pending with no lock held", i, n)
		}
	}
}
