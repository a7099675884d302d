package core_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/leasehold/leasehold/core"
	"github.com/leasehold/leasehold/core/coretest"
)

var errReplyLost = errors.New("invalid connection")

// lostReply takes the key in the store, then fails the call, as a MySQL
// acquire whose COMMIT reply is lost, or a call that times out after the
// server took the key.
type lostReply struct{ core.LockStore }

func (s lostReply) Acquire(ctx context.Context, key, owner string, ttl time.Duration) (int64, bool, error) {
	if _, _, err := s.LockStore.Acquire(ctx, key, owner, ttl); err != nil {
		return 0, false, err
	}
	return 0, false, errReplyLost
}

// TestAmbiguousAcquireReleases: an Acquire whose outcome is unknown
// releases the key with its owner id, so the key is free at once, not after
// a ttl held by nobody.
func TestAmbiguousAcquireReleases(t *testing.T) {
	for _, wait := range []time.Duration{0, time.Minute} {
		clock := core.NewManualClock(t0)
		store := core.NewMemoryStore(core.WithMemoryClock(clock))
		buf := &coretest.LogBuffer{}
		log := buf.Logger()
		locks := coretest.NewLocks(t, lostReply{store}, core.WithClock(clock), core.WithLogger(log))

		lk, err := locks.Acquire(context.Background(), "k", core.WithTTL(time.Hour), core.WithWait(wait))
		if lk != nil || !errors.Is(err, errReplyLost) {
			t.Fatalf("Acquire (wait %v): %v, %v; want the store's error", wait, lk, err)
		}
		if h := holder(t, store, "k"); h != "" {
			t.Fatalf("after a failed Acquire (wait %v), the store holds k for %s until its ttl", wait, h)
		}
		if len(buf.Lines("level=DEBUG", "released a lock this process must not keep", "key=k")) != 1 {
			t.Fatalf("no debug line for the release:\n%s", buf)
		}
		mustAcquire(t, coretest.NewLocks(t, store, core.WithClock(clock)), "k")
	}
}

// TestAmbiguousAcquireReleaseFails: a release that fails too is logged,
// and the caller still gets the acquire's error, bounded in time.
func TestAmbiguousAcquireReleaseFails(t *testing.T) {
	clock := core.NewManualClock(t0)
	store := core.NewMemoryStore(core.WithMemoryClock(clock))
	buf := &coretest.LogBuffer{}
	log := buf.Logger()
	locks := coretest.NewLocks(t, failingRelease{lostReply{store}}, core.WithClock(clock), core.WithLogger(log))
	if _, err := locks.Acquire(context.Background(), "k"); !errors.Is(err, errReplyLost) {
		t.Fatalf("Acquire: %v; want the store's error", err)
	}
	if len(buf.Lines("level=WARN", "could not release what a failed acquire may have taken", "key=k")) != 1 {
		t.Fatalf("no warning for the failed release:\n%s", buf)
	}
}

type failingRelease struct{ core.LockStore }

func (failingRelease) Release(context.Context, string, string) (bool, error) {
	return false, errStoreDown
}

// downRelease fails every Release while down is set, and reports each
// call on calls.
type downRelease struct {
	core.LockStore
	clock core.Clock
	mu    sync.Mutex
	down  bool
	calls chan time.Time
}

func (s *downRelease) Release(ctx context.Context, key, owner string) (bool, error) {
	s.mu.Lock()
	down := s.down
	s.mu.Unlock()
	defer func() { s.calls <- s.clock.Now() }()
	if down {
		return false, errStoreDown
	}
	return s.LockStore.Release(ctx, key, owner)
}

func (s *downRelease) setDown(down bool) {
	s.mu.Lock()
	s.down = down
	s.mu.Unlock()
}

// TestAmbiguousAcquireKeepsReleasing: when the release after an unknown
// outcome fails too, releases go on while the lease could be live, so the
// key is free within unknownRetryDelay (50ms) of the store answering
// again, not when its ttl ends.
func TestAmbiguousAcquireKeepsReleasing(t *testing.T) {
	clock := core.NewManualClock(t0)
	mem := core.NewMemoryStore(core.WithMemoryClock(clock))
	store := &downRelease{LockStore: lostReply{mem}, clock: clock, down: true, calls: make(chan time.Time, 100)}
	locks := coretest.NewLocks(t, store, core.WithClock(clock))
	if _, err := locks.Acquire(context.Background(), "k", core.WithTTL(10*time.Second)); !errors.Is(err, errReplyLost) {
		t.Fatalf("Acquire: %v; want the store's error", err)
	}
	<-store.calls  // the first release, which failed
	for range 60 { // 3s of a store that is down
		step(t, clock)
		<-store.calls
	}
	if holder(t, mem, "k") == "" {
		t.Fatal("the key is free while the store refused every release")
	}
	store.setDown(false)
	back := clock.Now()
	step(t, clock)
	<-store.calls
	if h := holder(t, mem, "k"); h != "" {
		t.Fatalf("%v after the store answered again, the key is still held by %s", clock.Now().Sub(back), h)
	}
}

// TestAmbiguousAcquireStopsAtTTL: a store that never answers again gets
// releases until the lease the acquisition may have taken has ended, and
// none after.
func TestAmbiguousAcquireStopsAtTTL(t *testing.T) {
	clock := core.NewManualClock(t0)
	mem := core.NewMemoryStore(core.WithMemoryClock(clock))
	store := &downRelease{LockStore: lostReply{mem}, clock: clock, down: true, calls: make(chan time.Time, 100)}
	locks := coretest.NewLocks(t, store, core.WithClock(clock))
	ttl := time.Second
	if _, err := locks.Acquire(context.Background(), "k", core.WithTTL(ttl)); !errors.Is(err, errReplyLost) {
		t.Fatalf("Acquire: %v; want the store's error", err)
	}
	last, tries := <-store.calls, 1
	for sleeping(clock) {
		clock.Advance(50 * time.Millisecond)
		select {
		case last = <-store.calls:
			tries++
		case <-time.After(time.Second): // woke up past the ttl, and gave up
		}
	}
	if tries < int(ttl/(50*time.Millisecond))-1 {
		t.Fatalf("%d releases within the ttl; want one every 50ms", tries)
	}
	if !last.Before(t0.Add(ttl)) {
		t.Fatalf("last release at %v; want none from the ttl's end (%v) on", last.Sub(t0), ttl)
	}
}

// sleeping waits for the background releases to sleep on clock, and
// reports false if they have ended instead.
func sleeping(clock *core.ManualClock) bool {
	for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if clock.Pending() == 1 {
			return true
		}
	}
	return false
}

// step advances clock by the 50ms between background releases, once they
// sleep on it.
func step(t *testing.T, clock *core.ManualClock) {
	t.Helper()
	if !sleeping(clock) {
		t.Fatal("the background releases ended")
	}
	clock.Advance(50 * time.Millisecond)
}
