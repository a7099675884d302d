package core_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leasehold/leasehold/core"
)

// bareStore hides every optional capability of the store it wraps.
type bareStore struct{ core.LockStore }

// muteStore is a Notifier that never notifies: every notification is lost.
// It counts tries.
type muteStore struct {
	*core.MemoryStore
	tries atomic.Int32
}

func (s *muteStore) Subscribe(string, func()) (func(), bool) { return func() {}, true }

func (s *muteStore) TryAcquire(ctx context.Context, key, owner string, ttl time.Duration) (int64, bool, time.Duration, error) {
	s.tries.Add(1)
	return s.MemoryStore.TryAcquire(ctx, key, owner, ttl)
}

// waitFor returns the waiter's result, failing after 10s.
func waitFor(t *testing.T, res <-chan acquireResult) acquireResult {
	t.Helper()
	select {
	case r := <-res:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("the waiting Acquire does not return")
		return acquireResult{}
	}
}

// stillWaiting fails if the waiter returned.
func stillWaiting(t *testing.T, res <-chan acquireResult, what string) {
	t.Helper()
	select {
	case r := <-res:
		t.Fatalf("%s: the waiter returned (%v, %v)", what, r.lk, r.err)
	case <-time.After(20 * time.Millisecond):
	}
}

// holderOn returns a Locks for a holder on store, with a clock of its own
// that never moves: it renews nothing, as a paused or dead process.
func holderOn(t *testing.T, store core.LockStore) *core.Locks {
	t.Helper()
	l, err := core.New(store, core.WithLogger(discard), core.WithClock(core.NewManualClock(t0)))
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestWaiterWokenByStoreRelease: a release by another Locks wakes the
// waiter through the store, while the waiter's clock stands still (no
// backoff step can fire).
func TestWaiterWokenByStoreRelease(t *testing.T) {
	clock := core.NewManualClock(t0)
	store := core.NewMemoryStore(core.WithMemoryClock(clock))
	hl := holderOn(t, store)
	waiterLocks, err := core.New(store, core.WithLogger(discard), core.WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	held := mustAcquire(t, hl, "k", core.WithTTL(time.Hour))
	res := acquireAsync(waiterLocks, context.Background(), "k", core.WithWait(time.Hour))
	eventually(t, "the waiter sleeps", func() bool { return clock.Pending() == 1 })
	stillWaiting(t, res, "key held")
	if err := held.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	r := waitFor(t, res)
	if r.err != nil || r.lk.Token() <= held.Token() {
		t.Fatalf("waiter got (%v, %v), want the key with a token above %d", r.lk, r.err, held.Token())
	}
}

// TestWaiterWokenInProcess: a release through the same Locks wakes its
// waiters on a store that notifies nothing.
func TestWaiterWokenInProcess(t *testing.T) {
	clock := core.NewManualClock(t0)
	store := bareStore{core.NewMemoryStore(core.WithMemoryClock(clock))}
	l, err := core.New(store, core.WithLogger(discard), core.WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	held := mustAcquire(t, l, "k", core.WithTTL(time.Hour))
	res := acquireAsync(l, context.Background(), "k", core.WithWait(time.Hour))
	// Two timers: the holder's renewal and the waiter's backoff.
	eventually(t, "the waiter sleeps", func() bool { return clock.Pending() == 2 })
	stillWaiting(t, res, "key held")
	if err := held.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	if r := waitFor(t, res); r.err != nil {
		t.Fatalf("waiter: %v", r.err)
	}
}

// releaseBetween releases a holder right after the waiter's first refused
// try, before the waiter waits: the race a late subscription would lose.
type releaseBetween struct {
	*core.MemoryStore
	once    sync.Once
	release func()
}

func (s *releaseBetween) TryAcquire(ctx context.Context, key, owner string, ttl time.Duration) (int64, bool, time.Duration, error) {
	token, ok, left, err := s.MemoryStore.TryAcquire(ctx, key, owner, ttl)
	if !ok && err == nil {
		s.once.Do(s.release)
	}
	return token, ok, left, err
}

// TestReleaseBetweenTryAndWaitIsNotMissed: the waiter subscribes before
// its first try, so a release between that try's refusal and its wait
// still wakes it; its clock never moves.
func TestReleaseBetweenTryAndWaitIsNotMissed(t *testing.T) {
	clock := core.NewManualClock(t0)
	mem := core.NewMemoryStore(core.WithMemoryClock(clock))
	hl := holderOn(t, mem)
	held := mustAcquire(t, hl, "k", core.WithTTL(time.Hour))
	store := &releaseBetween{MemoryStore: mem, release: func() {
		if err := held.Release(context.Background()); err != nil {
			t.Error(err)
		}
	}}
	waiterLocks, err := core.New(store, core.WithLogger(discard), core.WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	r := waitFor(t, acquireAsync(waiterLocks, context.Background(), "k", core.WithWait(time.Hour)))
	if r.err != nil {
		t.Fatalf("waiter: %v", r.err)
	}
}

// TestLostNotificationBackoff: with every notification lost, the waiter
// still takes the key at its next backoff step, within 5s of the release.
func TestLostNotificationBackoff(t *testing.T) {
	clock := core.NewManualClock(t0)
	mem := core.NewMemoryStore(core.WithMemoryClock(clock))
	hl := holderOn(t, mem)
	held := mustAcquire(t, hl, "k", core.WithTTL(time.Hour))
	store := &muteStore{MemoryStore: mem}
	waiterLocks, err := core.New(store, core.WithLogger(discard), core.WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	res := acquireAsync(waiterLocks, context.Background(), "k", core.WithWait(time.Hour))
	eventually(t, "the waiter sleeps", func() bool { return clock.Pending() == 1 })
	if err := held.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	stillWaiting(t, res, "notification lost, clock still")
	// Notifications on: the backoff floor is 2.5s to 5s.
	clock.Advance(2499 * time.Millisecond)
	stillWaiting(t, res, "before the backoff floor")
	clock.Advance(2501 * time.Millisecond)
	if r := waitFor(t, res); r.err != nil {
		t.Fatalf("waiter: %v", r.err)
	}
	if n := store.tries.Load(); n != 2 {
		t.Fatalf("%d tries, want 2", n)
	}
}

// TestWaiterTriesAtLeaseEnd: a holder that dies (no release, no renewal)
// is followed at the end of its lease plus a millisecond, as the store
// reported it, not at a backoff step.
func TestWaiterTriesAtLeaseEnd(t *testing.T) {
	clock := core.NewManualClock(t0)
	mem := core.NewMemoryStore(core.WithMemoryClock(clock))
	hl := holderOn(t, mem)
	mustAcquire(t, hl, "k", core.WithTTL(2*time.Second))
	store := &muteStore{MemoryStore: mem}
	waiterLocks, err := core.New(store, core.WithLogger(discard), core.WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	res := acquireAsync(waiterLocks, context.Background(), "k", core.WithWait(time.Hour))
	eventually(t, "the waiter sleeps", func() bool { return clock.Pending() == 1 })
	clock.Advance(2 * time.Second)
	stillWaiting(t, res, "lease just ended")
	clock.Advance(time.Millisecond)
	if r := waitFor(t, res); r.err != nil {
		t.Fatalf("waiter: %v", r.err)
	}
}

// noisyStore wakes its subscribers whenever the test says, key held or not.
type noisyStore struct {
	*core.MemoryStore
	mu    sync.Mutex
	wakes []func()
}

func (s *noisyStore) Subscribe(key string, wake func()) (func(), bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.wakes = append(s.wakes, wake)
	wake() // a duplicate from the start
	return func() {}, true
}

func (s *noisyStore) shout() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, w := range s.wakes {
		w()
		w()
	}
}

// TestNotificationNeverGrants: spurious and duplicated wakes make the
// waiter try, never take a held key; it still fails when its wait ends,
// and a later waiter takes the key with a greater token once released.
func TestNotificationNeverGrants(t *testing.T) {
	clock := core.NewManualClock(t0)
	mem := core.NewMemoryStore(core.WithMemoryClock(clock))
	hl := holderOn(t, mem)
	held := mustAcquire(t, hl, "k", core.WithTTL(time.Hour))
	store := &noisyStore{MemoryStore: mem}
	waiterLocks, err := core.New(store, core.WithLogger(discard), core.WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	res := acquireAsync(waiterLocks, context.Background(), "k", core.WithWait(10*time.Second))
	for range 5 {
		eventually(t, "the waiter sleeps", func() bool { return clock.Pending() == 1 })
		store.shout()
	}
	stillWaiting(t, res, "key held, wakes only")
	r, _ := drive(t, clock, time.Second, time.Minute, res, nil)
	if r == nil || !errors.Is(r.err, core.ErrNotAcquired) {
		t.Fatalf("waiter on a held key: %+v, want ErrNotAcquired", r)
	}
	if got := holder(t, mem, "k"); got != held.Owner() {
		t.Fatalf("holder %q, want %q", got, held.Owner())
	}
	if err := held.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	lk := mustAcquire(t, waiterLocks, "k", core.WithWait(time.Second))
	if lk.Token() <= held.Token() {
		t.Fatalf("token %d after %d", lk.Token(), held.Token())
	}
}
