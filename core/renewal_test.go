package core_test

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/leasehold/leasehold/core"
	"github.com/leasehold/leasehold/core/coretest"
)

var errStoreDown = errors.New("store down")

func TestRenewalCadence(t *testing.T) {
	for _, mode := range []string{"1s steps", "one Advance"} {
		t.Run(mode, func(t *testing.T) {
			clock := core.NewManualClock(t0)
			store := core.NewMemoryStore(core.WithMemoryClock(clock))
			spy := newSpy(store, clock)
			locks := coretest.NewLocks(t, spy, core.WithClock(clock))
			lk := mustAcquire(t, locks, "k") // default ttl, 30s
			short := mustAcquire(t, locks, "short", core.WithTTL(9*time.Second))

			if mode == "one Advance" {
				clock.Advance(5 * time.Minute)
			} else {
				for range 300 {
					clock.Advance(time.Second)
					if !lk.Held() || isDone(lk.Done()) || !short.Held() {
						t.Fatalf("lock lost at %v", clock.Now().Sub(t0))
					}
				}
			}
			if !lk.Held() || !short.Held() || holder(t, store, "k") != lk.Owner() || holder(t, store, "short") != short.Owner() {
				t.Fatal("locks not held after 5 minutes of renewals")
			}
			var want []time.Duration
			for at := 10 * time.Second; at <= 5*time.Minute; at += 10 * time.Second {
				want = append(want, at)
			}
			if got := since(spy.timesKey("renew", "k")); !slices.Equal(got, want) {
				t.Fatalf("renewals of a 30s lock at %v, want every 10s: %v", got, want)
			}
			want = nil
			for at := 3 * time.Second; at <= 5*time.Minute; at += 3 * time.Second {
				want = append(want, at)
			}
			if got := since(spy.timesKey("renew", "short")); !slices.Equal(got, want) {
				t.Fatalf("renewals of a 9s lock at %v, want every 3s: %v", got, want)
			}
		})
	}
}

// pausedHolder sets up the refusal scenario: a process holds key on procClock
// while the store runs on its own clock.
type pausedHolder struct {
	procClock, storeClock *core.ManualClock
	store                 *core.MemoryStore
	spy                   *spyStore
	locks                 *core.Locks
	log                   *coretest.LogBuffer
	evs                   *events
}

func newPausedHolder(t *testing.T, opts ...core.Option) *pausedHolder {
	h := &pausedHolder{procClock: core.NewManualClock(t0), storeClock: core.NewManualClock(t0), evs: &events{}}
	h.store = core.NewMemoryStore(core.WithMemoryClock(h.storeClock))
	h.spy = newSpy(h.store, h.procClock)
	h.log = &coretest.LogBuffer{}
	opts = append([]core.Option{core.WithClock(h.procClock), core.WithLogger(h.log.Logger()), core.WithEventHandler(h.evs.handle)}, opts...)
	h.locks = coretest.NewLocks(t, h.spy, opts...)
	return h
}

func TestLossByRefusal(t *testing.T) {
	for _, taken := range []bool{true, false} {
		name := "expired in the store"
		if taken {
			name = "taken by another owner"
		}
		t.Run(name, func(t *testing.T) {
			h := newPausedHolder(t)
			lk := mustAcquire(t, h.locks, "billing")

			// The process pauses: the store's time passes the ttl, its own does not.
			h.storeClock.Advance(core.DefaultTTL + time.Second)
			var other *core.Lock
			if taken {
				other = mustAcquire(t, coretest.NewLocks(t, h.store, core.WithClock(h.storeClock)), "billing")
			}
			if !lk.Held() || isDone(lk.Done()) {
				t.Fatal("a paused process noticed the loss before its clock moved")
			}

			// It resumes, up to just before its next renewal: nothing happens.
			h.procClock.Advance(core.DefaultTTL/3 - time.Millisecond)
			if !lk.Held() || h.spy.count("renew") != 0 {
				t.Fatal("the lock was renewed or lost before its renewal was due")
			}
			// The renewal is refused: the loss is known at once.
			h.procClock.Advance(time.Millisecond)
			if !isDone(lk.Done()) || lk.Held() {
				t.Fatal("lock still held after the store refused its renewal")
			}
			var lost *core.LockLostError
			cause := context.Cause(lk.Context())
			if !errors.As(cause, &lost) {
				t.Fatalf("cause %v, want a LockLostError", cause)
			}
			if lost.Reason != core.LostRefused || lost.Key != "billing" || lost.Token != lk.Token() || lost.Err != nil {
				t.Fatalf("LockLostError %+v", lost)
			}

			evs := h.evs.list()
			if len(evs) != 1 {
				t.Fatalf("%d events, want one lock-lost", len(evs))
			}
			ev := evs[0]
			if ev.Type != core.EventLockLost || ev.Key != "billing" || ev.Token != lk.Token() || !ev.Time.Equal(t0.Add(10*time.Second)) || !errors.As(ev.Err, &lost) {
				t.Fatalf("event %+v", ev)
			}
			if got := h.log.Lines("level=WARN", "lock lost", "key=billing"); len(got) != 1 {
				t.Fatalf("log:\n%s\nwant one warn line naming the key", h.log)
			}

			if err := lk.Release(context.Background()); err != cause {
				t.Fatalf("Release after the loss: %v, want the LockLostError %v", err, cause)
			}
			if taken && holder(t, h.store, "billing") != other.Owner() {
				t.Fatal("the new holder's lock was touched")
			}
			// A lost lock is not renewed again.
			h.procClock.Advance(time.Minute)
			if n := h.spy.count("renew"); n != 1 {
				t.Fatalf("%d renewals, want the refused one only", n)
			}
		})
	}
}

func TestLossByDeadline(t *testing.T) {
	clock := core.NewManualClock(t0)
	store := core.NewMemoryStore(core.WithMemoryClock(clock))
	spy := newSpy(store, clock)
	buf := &coretest.LogBuffer{}
	log := buf.Logger()
	var evs events
	locks := coretest.NewLocks(t, spy, core.WithClock(clock), core.WithLogger(log), core.WithEventHandler(evs.handle))
	lk := mustAcquire(t, locks, "k")

	// Renewed, sent at 10s: deadline ttl minus the safety margin later, 38.5s.
	clock.Advance(10 * time.Second)
	deadline := t0.Add(10*time.Second + core.DefaultTTL - core.SafetyMargin(core.DefaultTTL))
	spy.setRenewErr(errStoreDown)
	for clock.Now().Before(deadline.Add(-time.Second)) {
		clock.Advance(time.Second)
		if !lk.Held() || isDone(lk.Done()) {
			t.Fatalf("lost at %v, before the deadline", clock.Now().Sub(t0))
		}
	}
	clock.Advance(deadline.Sub(clock.Now()) - time.Millisecond)
	if !lk.Held() || isDone(lk.Done()) {
		t.Fatal("lost 1ms before the deadline")
	}
	clock.Advance(time.Millisecond)
	if lk.Held() || !isDone(lk.Done()) {
		t.Fatal("still held at the deadline: ttl minus the safety margin after the last confirmed renewal was sent")
	}

	// Retries every ttl/10 after the failure, none once the deadline passed.
	if got, want := since(spy.times("renew")), seconds(10, 20, 23, 26, 29, 32, 35, 38); !slices.Equal(got, want) {
		t.Fatalf("renewals at %v, want %v", got, want)
	}
	var lost *core.LockLostError
	if !errors.As(context.Cause(lk.Context()), &lost) || lost.Reason != core.LostDeadline || !errors.Is(lost, errStoreDown) || lost.Token != lk.Token() {
		t.Fatalf("cause %v; want a LockLostError past the deadline carrying the store's error", context.Cause(lk.Context()))
	}
	if got := evs.list(); len(got) != 1 || got[0].Type != core.EventLockLost || !got[0].Time.Equal(deadline) {
		t.Fatalf("events %+v; want one lock-lost at %v", got, deadline.Sub(t0))
	}
	if n := len(buf.Lines("level=WARN", "renewal failed", "key=k")); n != 7 {
		t.Fatalf("%d warnings for the 7 failed renewals:\n%s", n, buf)
	}
	if n := len(buf.Lines("level=WARN", "lock lost", "key=k")); n != 1 {
		t.Fatalf("no warning for the loss:\n%s", buf)
	}
}

// TestDeadlineCountsFromAcquireSend: an acquisition whose answer takes 5s
// gives a deadline counted from when it was sent, not from when it returned.
func TestDeadlineCountsFromAcquireSend(t *testing.T) {
	procClock := core.NewManualClock(t0)
	store := core.NewMemoryStore(core.WithMemoryClock(core.NewManualClock(t0)))
	spy := newSpy(store, procClock)
	spy.beforeAcquire = func(context.Context, string) { procClock.Advance(5 * time.Second) }
	spy.setRenewErr(errStoreDown)
	locks := coretest.NewLocks(t, spy, core.WithClock(procClock))
	lk := mustAcquire(t, locks, "k")

	hold := core.DefaultTTL - core.SafetyMargin(core.DefaultTTL) // 28.5s
	procClock.Advance(hold - 5*time.Second - time.Millisecond)
	if !lk.Held() || isDone(lk.Done()) {
		t.Fatal("lost before the deadline counted from when the acquisition was sent")
	}
	procClock.Advance(time.Millisecond)
	if lk.Held() || !isDone(lk.Done()) {
		t.Fatal("still held at the deadline counted from when the acquisition was sent")
	}
	if got, want := since(spy.times("renew")), seconds(10, 13, 16, 19, 22, 25, 28); !slices.Equal(got, want) {
		t.Fatalf("renewals at %v, want %v", got, want)
	}
}

// TestRecoveredRenewalMovesDeadline: a renewal that succeeds after failures
// moves the deadline to ttl after it was sent.
func TestRecoveredRenewalMovesDeadline(t *testing.T) {
	clock := core.NewManualClock(t0)
	store := core.NewMemoryStore(core.WithMemoryClock(clock))
	spy := newSpy(store, clock)
	locks := coretest.NewLocks(t, spy, core.WithClock(clock))
	lk := mustAcquire(t, locks, "k")

	spy.setRenewErr(errStoreDown)
	clock.Advance(15 * time.Second) // fails at 10s and 13s
	spy.setRenewErr(nil)
	clock.Advance(5 * time.Second) // succeeds at 16s: deadline 44.5s, next renewal 26s
	spy.setRenewErr(errStoreDown)
	deadline := t0.Add(16*time.Second + core.DefaultTTL - core.SafetyMargin(core.DefaultTTL))
	clock.Advance(deadline.Sub(clock.Now()) - time.Millisecond)
	if !lk.Held() || isDone(lk.Done()) {
		t.Fatal("lost before the deadline counted from the recovered renewal")
	}
	clock.Advance(time.Millisecond)
	if lk.Held() || !isDone(lk.Done()) {
		t.Fatal("still held at the deadline counted from the last confirmed renewal")
	}
	if got, want := since(spy.times("renew")), seconds(10, 13, 16, 26, 29, 32, 35, 38, 41, 44); !slices.Equal(got, want) {
		t.Fatalf("renewals at %v, want %v", got, want)
	}
}

// TestHangingRenewal: a renewal that never answers does not keep the holder
// believing past its deadline. It runs on the system clock, because a
// ManualClock's Advance waits for the renewals it triggers.
func TestHangingRenewal(t *testing.T) {
	const ttl = 300 * time.Millisecond
	baseline := runtime.NumGoroutine()
	// The store's time stands still, so the late answer is a yes.
	store := core.NewMemoryStore(core.WithMemoryClock(core.NewManualClock(t0)))
	spy := newSpy(store, core.SystemClock())
	entered := make(chan context.Context, 1)
	unblock := make(chan struct{})
	spy.beforeRenew = func(ctx context.Context, _ string) {
		select {
		case entered <- ctx:
		default:
		}
		<-unblock // hangs, deaf to its context
	}
	var evs events
	locks, err := core.New(spy, core.WithLogger(discard), core.WithEventHandler(evs.handle))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	lk, err := locks.Acquire(context.Background(), "k", core.WithTTL(ttl))
	if err != nil {
		t.Fatal(err)
	}

	var renewCtx context.Context
	select {
	case renewCtx = <-entered:
	case <-time.After(10 * time.Second):
		t.Fatal("no renewal sent")
	}
	select {
	case <-lk.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("lock not lost while its renewal hangs")
	}
	if elapsed, hold := time.Since(start), ttl-core.SafetyMargin(ttl); elapsed < hold {
		t.Fatalf("lost %v after the acquisition: before its deadline, %v", elapsed, hold)
	}
	var lost *core.LockLostError
	if !errors.As(context.Cause(lk.Context()), &lost) || lost.Reason != core.LostDeadline {
		t.Fatalf("cause %v, want a LockLostError past the deadline", context.Cause(lk.Context()))
	}
	if lk.Held() {
		t.Fatal("Held after the loss")
	}
	// The event follows the context's end, from the goroutine that noticed.
	eventually(t, "the lock-lost event", func() bool { return len(evs.list()) > 0 })
	if got := evs.list(); len(got) != 1 || got[0].Type != core.EventLockLost || got[0].Time.Before(start.Add(ttl-core.SafetyMargin(ttl))) {
		t.Fatalf("events %+v; want one lock-lost after the deadline", got)
	}
	// The hanging call has a deadline of its own.
	if _, ok := renewCtx.Deadline(); !ok {
		t.Fatal("a renewal's ctx has no deadline")
	}

	// The renewal finally answers yes: the loss stands.
	close(unblock)
	if err := locks.Close(context.Background()); err != nil { // waits for the renewal
		t.Fatal(err)
	}
	if n := spy.count("renew"); n != 1 {
		t.Fatalf("%d renewals, want the hanging one only", n)
	}
	if lk.Held() {
		t.Fatal("a late renewal revived a lost lock")
	}
	if err := lk.Release(context.Background()); !errors.As(err, &lost) {
		t.Fatalf("Release after the loss: %v", err)
	}
	noLeak(t, baseline)
}

// TestCloseCancelsHangingRenewal: Close does not wait out a renewal stuck in
// the store: the renewal's context ends, and Close returns.
func TestCloseCancelsHangingRenewal(t *testing.T) {
	clock := core.NewManualClock(t0)
	store := core.NewMemoryStore(core.WithMemoryClock(clock))
	spy := newSpy(store, clock)
	entered := make(chan struct{})
	spy.beforeRenew = func(ctx context.Context, _ string) {
		close(entered)
		<-ctx.Done()
	}
	locks, err := core.New(spy, core.WithClock(clock), core.WithLogger(discard))
	if err != nil {
		t.Fatal(err)
	}
	mustAcquire(t, locks, "k")
	advanced := make(chan struct{})
	go func() {
		defer close(advanced)
		clock.Advance(core.DefaultTTL / 3)
	}()
	<-entered

	closed := make(chan error, 1)
	go func() { closed <- locks.Close(context.Background()) }()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close waits for a renewal hanging in the store")
	}
	<-advanced
	if holder(t, store, "k") != "" {
		t.Fatal("Close did not release the lock")
	}
}

func TestPanickingEventHandler(t *testing.T) {
	buf := &coretest.LogBuffer{}
	log := buf.Logger()
	procClock, storeClock := core.NewManualClock(t0), core.NewManualClock(t0)
	store := core.NewMemoryStore(core.WithMemoryClock(storeClock))
	spy := newSpy(store, procClock)
	calls := 0
	locks := coretest.NewLocks(t, spy, core.WithClock(procClock), core.WithLogger(log), core.WithEventHandler(func(core.Event) {
		calls++
		panic("handler bug")
	}))
	lost := mustAcquire(t, locks, "lost")
	kept := mustAcquire(t, locks, "kept", core.WithTTL(time.Hour))

	storeClock.Advance(core.DefaultTTL)    // "lost" expires in the store
	procClock.Advance(core.DefaultTTL / 3) // its renewal is refused
	if calls != 1 || !isDone(lost.Done()) || lost.Held() {
		t.Fatalf("handler called %d times, lost lock done: %v", calls, isDone(lost.Done()))
	}
	if got := buf.Lines("level=ERROR", "event handler panicked", "handler bug"); len(got) != 1 {
		t.Fatalf("log:\n%s\nwant the handler's panic logged", buf)
	}
	var lle *core.LockLostError
	if err := lost.Release(context.Background()); !errors.As(err, &lle) {
		t.Fatalf("Release of the lost lock: %v", err)
	}

	// The instance goes on: it renews, acquires and releases.
	procClock.Advance(time.Hour)
	if !kept.Held() || spy.countKey("renew", "kept") != 3 {
		t.Fatalf("other lock: held %v after %d renewals", kept.Held(), spy.countKey("renew", "kept"))
	}
	again := mustAcquire(t, locks, "lost")
	if err := again.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := locks.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if holder(t, store, "kept") != "" {
		t.Fatal("Close did not release")
	}
}

// TestDeadlineCountsFromRenewalSend: a renewal that takes long to confirm
// moves the deadline to ttl after it was sent, not after it returned. A
// ManualClock cannot tell the two apart (time stands still while Advance
// waits for the renewal), so this runs on the system clock.
func TestDeadlineCountsFromRenewalSend(t *testing.T) {
	const (
		ttl  = 900 * time.Millisecond
		slow = ttl / 3 // the first renewal's round trip
	)
	store := core.NewMemoryStore(core.WithMemoryClock(core.NewManualClock(t0)))
	spy := newSpy(store, core.SystemClock())
	var callStart time.Time
	spy.beforeRenew = func(context.Context, string) {
		spy.mu.Lock()
		spy.beforeRenew = nil // only the first renewal is slow, and answers yes
		callStart = time.Now()
		spy.mu.Unlock()
		time.Sleep(slow)
		spy.setRenewErr(errStoreDown) // every later one fails
	}
	locks, err := core.New(spy, core.WithLogger(discard))
	if err != nil {
		t.Fatal(err)
	}
	defer locks.Close(context.Background())
	lk, err := locks.Acquire(context.Background(), "k", core.WithTTL(ttl))
	if err != nil {
		t.Fatal(err)
	}
	// lastHeld is a moment before a call of Held that answered true: Held
	// read the clock no earlier. A late poll can only miss the proof, never
	// forge it, so a slow machine cannot fail this test.
	var lastHeld time.Time
	for {
		before := time.Now()
		if !lk.Held() {
			break
		}
		lastHeld = before
		time.Sleep(time.Millisecond)
	}
	spy.mu.Lock()
	started := callStart
	spy.mu.Unlock()
	if started.IsZero() {
		t.Fatal("lost before the first renewal")
	}
	// Sent at or before started: the holder trusts the lock until at most
	// started + ttl - SafetyMargin(ttl). Counted from the answer, it would
	// trust it until at least slow later, and Held would answer true past
	// that bound.
	if bound := started.Add(ttl - core.SafetyMargin(ttl)); lastHeld.After(bound) {
		t.Fatalf("Held answered true %v past ttl - SafetyMargin(ttl) from the renewal's send: the deadline counts from its answer", lastHeld.Sub(bound))
	}
	if n := spy.count("renew"); n < 2 {
		t.Fatalf("lost after %d renewals; want the slow one confirmed, then failures", n)
	}
}
