package core_test

import (
	"context"
	"errors"
	"fmt"
	"io"
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

// next waits for the next Release call.
func (s *downRelease) next(t *testing.T) {
	t.Helper()
	select {
	case <-s.calls:
	case <-time.After(5 * time.Second):
		t.Fatal("no release came; the background releases have stopped")
	}
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

// TestAmbiguousAcquireStopsWhenTheStoreNeverAnswers: a store that never
// answers again gets releases for a minute, though the ttl is a second (a
// stalled store may run the acquisition when it resumes, and its lease
// lasts a ttl from then), and none after.
func TestAmbiguousAcquireStopsWhenTheStoreNeverAnswers(t *testing.T) {
	clock := core.NewManualClock(t0)
	mem := core.NewMemoryStore(core.WithMemoryClock(clock))
	store := &downRelease{LockStore: lostReply{mem}, clock: clock, down: true, calls: make(chan time.Time, 100)}
	locks := coretest.NewLocks(t, store, core.WithClock(clock))
	if _, err := locks.Acquire(context.Background(), "k", core.WithTTL(time.Second)); !errors.Is(err, errReplyLost) {
		t.Fatalf("Acquire: %v; want the store's error", err)
	}
	last, tries := <-store.calls, 1
	for sleeping(clock) {
		clock.Advance(50 * time.Millisecond)
		select {
		case last = <-store.calls:
			tries++
		case <-time.After(time.Second): // woke up past the window, and gave up
		}
	}
	if window := time.Minute; tries < int(window/(50*time.Millisecond))-1 || !last.Before(t0.Add(window)) || last.Before(t0.Add(window-time.Second)) {
		t.Fatalf("%d releases, the last at %v; want one every 50ms until the store has had a minute to answer, none after", tries, last.Sub(t0))
	}
}

// lateAcquire fails every Acquire at once, as a call that timed out, and
// holds the acquisition back until land: a request still on its way to a
// stalled server, or on a connection other than the release's.
type lateAcquire struct {
	core.LockStore
	mu      sync.Mutex
	pending []func()
}

func (s *lateAcquire) Acquire(ctx context.Context, key, owner string, ttl time.Duration) (int64, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pending = append(s.pending, func() { s.LockStore.Acquire(context.Background(), key, owner, ttl) })
	return 0, false, context.DeadlineExceeded
}

func (s *lateAcquire) land() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, f := range s.pending {
		f()
	}
	s.pending = nil
}

// TestAmbiguousAcquireLandsAfterTheTTL: the store stalls past the ttl and
// runs the held acquisition when it resumes; the releases are still going,
// and free the key within 50ms of the store answering.
func TestAmbiguousAcquireLandsAfterTheTTL(t *testing.T) {
	clock := core.NewManualClock(t0)
	mem := core.NewMemoryStore(core.WithMemoryClock(clock))
	late := &lateAcquire{LockStore: mem}
	store := &downRelease{LockStore: late, clock: clock, down: true, calls: make(chan time.Time, 100)}
	locks := coretest.NewLocks(t, store, core.WithClock(clock))
	ttl := time.Second
	if _, err := locks.Acquire(context.Background(), "k", core.WithTTL(ttl)); err == nil {
		t.Fatal("Acquire succeeded; want the store's error")
	}
	store.next(t)
	for clock.Now().Before(t0.Add(4 * ttl)) { // a stall of 4 ttls
		step(t, clock)
		store.next(t)
	}
	late.land()
	store.setDown(false)
	if holder(t, mem, "k") == "" {
		t.Fatal("the acquisition did not land")
	}
	step(t, clock)
	store.next(t)
	if h := holder(t, mem, "k"); h != "" {
		t.Fatalf("50ms after the store answered again, the key is still held by %s, %v after the acquire was sent", h, clock.Now().Sub(t0))
	}
}

// TestAmbiguousAcquireOvertaken: the release after an unknown outcome is
// answered "not held", and the acquisition, still on its way, lands after
// it; the checks that follow free the key within 100ms.
func TestAmbiguousAcquireOvertaken(t *testing.T) {
	clock := core.NewManualClock(t0)
	mem := core.NewMemoryStore(core.WithMemoryClock(clock))
	late := &lateAcquire{LockStore: mem}
	locks := coretest.NewLocks(t, late, core.WithClock(clock))
	if _, err := locks.Acquire(context.Background(), "k", core.WithTTL(time.Hour)); err == nil {
		t.Fatal("Acquire succeeded; want the store's error")
	}
	late.land()
	if holder(t, mem, "k") == "" {
		t.Fatal("the acquisition did not land")
	}
	if !sleeping(clock) {
		t.Fatal("no check follows the release that found nothing")
	}
	clock.Advance(100 * time.Millisecond)
	deadline := time.Now().Add(5 * time.Second)
	for holder(t, mem, "k") != "" {
		if time.Now().After(deadline) {
			t.Fatal("100ms after the acquisition landed, the key is still held")
		}
		time.Sleep(time.Millisecond)
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

// countedRelease counts the Release calls that reach the store.
type countedRelease struct {
	core.LockStore
	mu sync.Mutex
	n  int
}

func (s *countedRelease) Release(ctx context.Context, key, owner string) (bool, error) {
	s.mu.Lock()
	s.n++
	s.mu.Unlock()
	return s.LockStore.Release(ctx, key, owner)
}

func (s *countedRelease) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

// TestAmbiguousAcquireOvertakenLandsLater: the release after an unknown
// outcome is answered "not held" at once, and the acquisition, on its way
// on another connection, lands later: d after that answer, the key is
// free within max(20ms, d/4) of the landing (in 5ms steps of the clock),
// not at the next of checks 100ms to 800ms apart. An acquisition that
// never lands costs about eighteen releases, the last of them within 2s.
func TestAmbiguousAcquireOvertakenLandsLater(t *testing.T) {
	const tick = 5 * time.Millisecond
	for _, d := range []time.Duration{30 * time.Millisecond, 110 * time.Millisecond, 330 * time.Millisecond, 900 * time.Millisecond, -1} {
		clock := core.NewManualClock(t0)
		mem := core.NewMemoryStore(core.WithMemoryClock(clock))
		late := &lateAcquire{LockStore: mem}
		store := &countedRelease{LockStore: late}
		locks := coretest.NewLocks(t, store, core.WithClock(clock))
		if _, err := locks.Acquire(context.Background(), "k", core.WithTTL(time.Hour)); err == nil {
			t.Fatal("Acquire succeeded; want the store's error")
		}
		answered := clock.Now() // the memory store answers at once
		// settle waits for the releases to sleep on the clock again, and
		// reports false if they have ended instead (or not within wait).
		settle := func(wait time.Duration) bool {
			for deadline := time.Now().Add(wait); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
				if clock.Pending() == 1 {
					return true
				}
				if d >= 0 && holder(t, mem, "k") == "" && clock.Now().Sub(answered) >= d {
					return false // the key was freed, and the releases ended
				}
			}
			return false
		}
		if d < 0 {
			for settle(time.Second) {
				clock.Advance(tick)
			}
			if n, took := store.count(), clock.Now().Sub(answered); n > 20 || took < 1500*time.Millisecond || took > 2*time.Second {
				t.Fatalf("an acquisition that never landed: %d releases, until %v after the first answer; want at most 20, for 1.5s to 2s", n, took)
			}
			continue
		}
		for clock.Now().Sub(answered) < d {
			if !settle(5 * time.Second) {
				t.Fatalf("the releases ended %v after the first answer; the acquisition lands at %v", clock.Now().Sub(answered), d)
			}
			clock.Advance(tick)
		}
		settle(5 * time.Second)
		late.land()
		landed := clock.Now()
		if holder(t, mem, "k") == "" {
			t.Fatal("the acquisition did not land")
		}
		for holder(t, mem, "k") != "" {
			if !settle(5*time.Second) && holder(t, mem, "k") != "" {
				t.Fatalf("the releases ended with the key held, %v after it was taken", clock.Now().Sub(landed))
			}
			if holder(t, mem, "k") == "" {
				break
			}
			clock.Advance(tick)
		}
		if freed, want := clock.Now().Sub(landed), max(20*time.Millisecond, d/4)+tick; freed > want {
			t.Errorf("an acquisition that landed %v after the first answer held the key %v; want at most %v", d, freed, want)
		}
	}
}

// TestFailedReleaseKeepsReleasing: a Release the store fails (a connection
// reset mid-call) returns the error, and releases go on in the background
// until the store answers, so the key is free within 50ms of that, not
// held by nobody until its ttl. A lock whose Acquire context ends is
// released the same way.
func TestFailedReleaseKeepsReleasing(t *testing.T) {
	for _, byCancel := range []bool{false, true} {
		clock := core.NewManualClock(t0)
		mem := core.NewMemoryStore(core.WithMemoryClock(clock))
		store := &downRelease{LockStore: mem, clock: clock, calls: make(chan time.Time, 100)}
		locks := coretest.NewLocks(t, store, core.WithClock(clock))
		ctx, cancel := context.WithCancel(context.Background())
		lk, err := locks.Acquire(ctx, "k", core.WithTTL(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		store.setDown(true)
		if byCancel {
			cancel()
		} else if err := lk.Release(context.Background()); !errors.Is(err, errStoreDown) {
			t.Fatalf("Release: %v; want the store's error", err)
		}
		cancel()
		store.next(t)  // the release, which failed
		for range 20 { // 1s of a store that is down
			step(t, clock)
			store.next(t)
		}
		if holder(t, mem, "k") == "" {
			t.Fatal("the key is free while the store refused every release")
		}
		store.setDown(false)
		step(t, clock)
		store.next(t)
		if h := holder(t, mem, "k"); h != "" {
			t.Fatalf("released by cancel %v: 50ms after the store answered again, the key is still held by %s", byCancel, h)
		}
		if sleeping(clock) {
			t.Fatal("releases go on after the store answered")
		}
	}
}

// errConnBroken is a connection that broke mid-call, as go-sql-driver's
// "invalid connection": the request may have run.
type errConnBroken struct{}

func (errConnBroken) Error() string { return "invalid connection" }
func (errConnBroken) Unwrap() error { return io.ErrUnexpectedEOF }

// brokenConn takes the key and then fails the Acquire with errConnBroken,
// and fails the first Release the same way: a connection reset storm.
type brokenConn struct {
	core.LockStore
	mu       sync.Mutex
	releases int
}

func (s *brokenConn) Acquire(ctx context.Context, key, owner string, ttl time.Duration) (int64, bool, error) {
	if _, _, err := s.LockStore.Acquire(ctx, key, owner, ttl); err != nil {
		return 0, false, err
	}
	return 0, false, fmt.Errorf("store: %w", errConnBroken{})
}

func (s *brokenConn) Release(ctx context.Context, key, owner string) (bool, error) {
	s.mu.Lock()
	s.releases++
	first := s.releases == 1
	s.mu.Unlock()
	if first {
		return false, fmt.Errorf("store: %w", errConnBroken{})
	}
	return s.LockStore.Release(ctx, key, owner)
}

// TestAmbiguousAcquireReleaseBrokenAlike: an acquire and its release that
// fail alike because the connection broke mid-call (not a refusal: the
// acquire may have run) are followed by more releases, which free the key.
func TestAmbiguousAcquireReleaseBrokenAlike(t *testing.T) {
	clock := core.NewManualClock(t0)
	mem := core.NewMemoryStore(core.WithMemoryClock(clock))
	locks := coretest.NewLocks(t, &brokenConn{LockStore: mem}, core.WithClock(clock))
	if _, err := locks.Acquire(context.Background(), "k", core.WithTTL(time.Hour)); !errors.As(err, &errConnBroken{}) {
		t.Fatalf("Acquire: %v; want the store's error", err)
	}
	if holder(t, mem, "k") == "" {
		t.Fatal("the acquisition did not take the key")
	}
	step(t, clock)
	deadline := time.Now().Add(5 * time.Second)
	for holder(t, mem, "k") != "" {
		if time.Now().After(deadline) {
			t.Fatal("50ms after a release that failed like the acquire, the key is still held")
		}
		time.Sleep(time.Millisecond)
	}
}
