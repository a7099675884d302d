package core_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold/core"
	"github.com/leasehold/leasehold/core/coretest"
)

func TestAcquireRelease(t *testing.T) {
	clock := core.NewManualClock(t0)
	store := core.NewMemoryStore(core.WithMemoryClock(clock))
	locks := coretest.NewLocks(t, store, core.WithClock(clock))

	lk := mustAcquire(t, locks, "orders")
	if lk.Key() != "orders" || lk.Owner() == "" || lk.Token() <= 0 || lk.TTL() != core.DefaultTTL {
		t.Fatalf("lock: key %q owner %q token %d ttl %v", lk.Key(), lk.Owner(), lk.Token(), lk.TTL())
	}
	if !lk.Held() || isDone(lk.Done()) {
		t.Fatal("a fresh lock is not held")
	}
	if got := core.LockFromContext(lk.Context()); got != lk {
		t.Fatalf("LockFromContext(lock.Context()) = %p, want %p", got, lk)
	}
	if core.LockFromContext(context.Background()) != nil {
		t.Fatal("LockFromContext outside a lock is not nil")
	}
	infos := live(t, store)
	if len(infos) != 1 || infos[0].Key != "orders" || infos[0].Owner != lk.Owner() ||
		infos[0].Token != lk.Token() || infos[0].ExpiresIn != core.DefaultTTL {
		t.Fatalf("store holds %+v, want orders for %s, token %d, expiring in %v", infos, lk.Owner(), lk.Token(), core.DefaultTTL)
	}

	// Held: by this instance or by another, the key is not free.
	if _, err := locks.Acquire(context.Background(), "orders"); !errors.Is(err, core.ErrNotAcquired) {
		t.Fatalf("Acquire of a held key: %v, want ErrNotAcquired", err)
	}
	other := coretest.NewLocks(t, store, core.WithClock(clock))
	if _, err := other.Acquire(context.Background(), "orders"); !errors.Is(err, core.ErrNotAcquired) {
		t.Fatalf("Acquire of a key held by another instance: %v, want ErrNotAcquired", err)
	}
	// Another key is independent.
	mustAcquire(t, other, "orders/2")

	if err := lk.Release(context.Background()); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if lk.Held() || !isDone(lk.Done()) {
		t.Fatal("a released lock is still held")
	}
	if cause := context.Cause(lk.Context()); !errors.Is(cause, core.ErrReleased) {
		t.Fatalf("cause after release: %v, want ErrReleased", cause)
	}
	if h := holder(t, store, "orders"); h != "" {
		t.Fatalf("store still holds the released key for %s", h)
	}

	again := mustAcquire(t, other, "orders", core.WithTTL(5*time.Second))
	if again.Token() <= lk.Token() {
		t.Fatalf("token after re-acquisition %d, not greater than %d", again.Token(), lk.Token())
	}
	if again.Owner() == lk.Owner() {
		t.Fatal("two acquisitions share an owner id")
	}
	if again.TTL() != 5*time.Second {
		t.Fatalf("TTL() = %v, want 5s", again.TTL())
	}
	for _, info := range live(t, store) {
		if info.Key == "orders" && info.ExpiresIn != 5*time.Second {
			t.Fatalf("WithTTL(5s) lock expires in %v in the store", info.ExpiresIn)
		}
	}
	if locks.Store() != store {
		t.Fatal("Store() is not the store given to New")
	}
}

func TestAcquireWaitSucceedsOnceHolderReleases(t *testing.T) {
	storeClock := core.NewManualClock(t0)
	store := core.NewMemoryStore(core.WithMemoryClock(storeClock))
	holderLocks := coretest.NewLocks(t, store, core.WithClock(storeClock))
	held := mustAcquire(t, holderLocks, "report")

	waitClock := core.NewManualClock(t0)
	spy := newSpy(store, waitClock)
	waiter := coretest.NewLocks(t, spy, core.WithClock(waitClock))
	res := acquireAsync(waiter, context.Background(), "report", core.WithWait(time.Minute))

	// While the key is held, the waiter keeps trying, backing off.
	if r, _ := drive(t, waitClock, time.Millisecond, 5*time.Second, res, spy.granted); r != nil {
		t.Fatalf("Acquire returned while the key was held: %v", r.err)
	}
	attempts := spy.times("acquire")
	if len(attempts) < 4 || len(attempts) > 25 {
		t.Fatalf("%d attempts in 5s: want a few, backing off", len(attempts))
	}
	for i := 1; i < len(attempts); i++ {
		gap := attempts[i].Sub(attempts[i-1])
		if gap < 10*time.Millisecond || gap > time.Second+time.Millisecond {
			t.Fatalf("attempt %d came %v after the previous one: want between the first backoff and the 1s cap", i, gap)
		}
	}
	if first, last := attempts[1].Sub(attempts[0]), attempts[len(attempts)-1].Sub(attempts[len(attempts)-2]); last <= first {
		t.Fatalf("backoff does not grow: first gap %v, last gap %v", first, last)
	}

	if err := held.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	r, moved := drive(t, waitClock, time.Millisecond, 2*time.Second, res, spy.granted)
	if r == nil {
		t.Fatal("the waiter did not take the key within the 1s backoff cap of its release")
	}
	if r.err != nil {
		t.Fatalf("waiting Acquire: %v", r.err)
	}
	if moved > time.Second+time.Millisecond {
		t.Fatalf("waiter took the key %v after its release: longer than the 1s backoff cap", moved)
	}
	if !r.lk.Held() || r.lk.Token() <= held.Token() || holder(t, store, "report") != r.lk.Owner() {
		t.Fatalf("waiter's lock: held %v, token %d (holder had %d)", r.lk.Held(), r.lk.Token(), held.Token())
	}
}

func TestAcquireWaitEnds(t *testing.T) {
	storeClock := core.NewManualClock(t0)
	store := core.NewMemoryStore(core.WithMemoryClock(storeClock))
	mustAcquire(t, coretest.NewLocks(t, store, core.WithClock(storeClock)), "report")

	waitClock := core.NewManualClock(t0)
	spy := newSpy(store, waitClock)
	waiter := coretest.NewLocks(t, spy, core.WithClock(waitClock))
	res := acquireAsync(waiter, context.Background(), "report", core.WithWait(2*time.Second))

	r, moved := drive(t, waitClock, time.Millisecond, 10*time.Second, res, spy.granted)
	if r == nil {
		t.Fatal("Acquire did not return after its wait")
	}
	if !errors.Is(r.err, core.ErrNotAcquired) || r.lk != nil {
		t.Fatalf("Acquire after the wait: %v, %v; want ErrNotAcquired", r.lk, r.err)
	}
	// The wait lasts exactly its length, and tries once more at its end.
	if moved != 2*time.Second {
		t.Fatalf("wait of 2s ended after %v", moved)
	}
	attempts := spy.times("acquire")
	if len(attempts) < 3 {
		t.Fatalf("%d attempts in a 2s wait", len(attempts))
	}
	if last := attempts[len(attempts)-1]; !last.Equal(t0.Add(2 * time.Second)) {
		t.Fatalf("last attempt at %v, want at the end of the wait", last.Sub(t0))
	}
}

func TestAcquireWaitEndsWithContext(t *testing.T) {
	storeClock := core.NewManualClock(t0)
	store := core.NewMemoryStore(core.WithMemoryClock(storeClock))
	mustAcquire(t, coretest.NewLocks(t, store, core.WithClock(storeClock)), "report")

	waitClock := core.NewManualClock(t0)
	waiter := coretest.NewLocks(t, store, core.WithClock(waitClock))
	stop := errors.New("shutting down")
	ctx, cancel := context.WithCancelCause(context.Background())
	res := acquireAsync(waiter, ctx, "report", core.WithWait(time.Hour))
	// Let it try a few times, then cancel without moving its clock.
	if r, _ := drive(t, waitClock, 10*time.Millisecond, time.Second, res, nil); r != nil {
		t.Fatalf("Acquire returned early: %v", r.err)
	}
	cancel(stop)
	r := <-res
	if !errors.Is(r.err, core.ErrNotAcquired) || !errors.Is(r.err, stop) {
		t.Fatalf("Acquire after its ctx ended: %v; want ErrNotAcquired and the ctx's cause", r.err)
	}
	if n := waitClock.Pending(); n != 0 {
		t.Fatalf("%d timers left on the clock after the wait ended", n)
	}
}

func TestAcquireWithDoneContext(t *testing.T) {
	clock := core.NewManualClock(t0)
	store := core.NewMemoryStore(core.WithMemoryClock(clock))
	spy := newSpy(store, clock)
	locks := coretest.NewLocks(t, spy, core.WithClock(clock))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	lk, err := locks.Acquire(ctx, "k")
	if !errors.Is(err, context.Canceled) || lk != nil {
		t.Fatalf("Acquire with a done ctx: %v, %v", lk, err)
	}
	if n := spy.count("acquire"); n != 0 {
		t.Fatalf("the store saw %d acquisitions", n)
	}
}

func TestAcquireContextEndReleasesLock(t *testing.T) {
	clock := core.NewManualClock(t0)
	store := core.NewMemoryStore(core.WithMemoryClock(clock))
	spy := newSpy(store, clock)
	locks := coretest.NewLocks(t, spy, core.WithClock(clock))

	ctx, cancel := context.WithCancel(context.Background())
	lk, err := locks.Acquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	keep := mustAcquire(t, locks, "k2") // on another context: stays
	cancel()
	<-lk.Done()
	if lk.Held() {
		t.Fatal("lock still held after its Acquire ctx ended")
	}
	eventually(t, "the release in the store", func() bool { return spy.count("release") == 1 })
	if h := holder(t, store, "k"); h != "" {
		t.Fatalf("store still holds the key for %s", h)
	}
	other := coretest.NewLocks(t, store, core.WithClock(clock))
	mustAcquire(t, other, "k")
	if err := lk.Release(context.Background()); err != nil {
		t.Fatalf("Release after the ctx released it: %v", err)
	}
	if !keep.Held() || holder(t, store, "k2") != keep.Owner() {
		t.Fatal("a lock on another context was released too")
	}
	// No renewal for the released lock.
	clock.Advance(time.Minute)
	if n := spy.countKey("renew", "k"); n != 0 {
		t.Fatalf("a released lock was renewed %d times", n)
	}
}

func TestReleaseWithDoneContextStillReleases(t *testing.T) {
	clock := core.NewManualClock(t0)
	store := core.NewMemoryStore(core.WithMemoryClock(clock))
	locks := coretest.NewLocks(t, store, core.WithClock(clock))
	lk := mustAcquire(t, locks, "k")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := lk.Release(ctx); err != nil {
		t.Fatalf("Release with a done ctx: %v", err)
	}
	if h := holder(t, store, "k"); h != "" {
		t.Fatalf("store still holds the key for %s", h)
	}
}

func TestReleaseTwice(t *testing.T) {
	clock := core.NewManualClock(t0)
	store := core.NewMemoryStore(core.WithMemoryClock(clock))
	spy := newSpy(store, clock)
	locks := coretest.NewLocks(t, spy, core.WithClock(clock))
	lk := mustAcquire(t, locks, "k")
	if err := lk.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Someone else takes the key: a second Release must not touch it.
	other := mustAcquire(t, coretest.NewLocks(t, store, core.WithClock(clock)), "k")
	if err := lk.Release(context.Background()); err != nil {
		t.Fatalf("second Release: %v", err)
	}
	if n := spy.count("release"); n != 1 {
		t.Fatalf("the store saw %d releases, want 1", n)
	}
	if holder(t, store, "k") != other.Owner() {
		t.Fatal("the second Release freed another holder's lock")
	}
}

// TestReleaseAfterStoreExpiry: a holder paused past its ttl releases; the
// store no longer has its lock, so the release reports the loss.
func TestReleaseAfterStoreExpiry(t *testing.T) {
	procClock := core.NewManualClock(t0)
	storeClock := core.NewManualClock(t0)
	store := core.NewMemoryStore(core.WithMemoryClock(storeClock))
	var evs events
	locks := coretest.NewLocks(t, store, core.WithClock(procClock), core.WithEventHandler(evs.handle))
	lk := mustAcquire(t, locks, "k")
	storeClock.Advance(core.DefaultTTL)
	err := lk.Release(context.Background())
	var lost *core.LockLostError
	if !errors.As(err, &lost) || lost.Reason != core.LostRefused || lost.Key != "k" || lost.Token != lk.Token() {
		t.Fatalf("Release of a lock expired in the store: %v; want a LockLostError, refused", err)
	}
	if got := evs.list(); len(got) != 1 || got[0].Type != core.EventLockLost || got[0].Key != "k" {
		t.Fatalf("events: %+v; want one lock-lost", got)
	}
}

func TestWithLock(t *testing.T) {
	clock := core.NewManualClock(t0)
	store := core.NewMemoryStore(core.WithMemoryClock(clock))
	locks := coretest.NewLocks(t, store, core.WithClock(clock))
	errFn := errors.New("fn failed")

	t.Run("returns", func(t *testing.T) {
		var inside *core.Lock
		err := locks.WithLock(context.Background(), "job", func(ctx context.Context) error {
			inside = core.LockFromContext(ctx)
			if inside == nil {
				return errors.New("no lock in fn's ctx")
			}
			if inside.Token() <= 0 || !inside.Held() || holder(t, store, "job") != inside.Owner() {
				return fmt.Errorf("fn runs without holding the key (token %d)", inside.Token())
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return nil
		}, core.WithTTL(time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		if inside.TTL() != time.Minute {
			t.Fatalf("WithLock ignored WithTTL: %v", inside.TTL())
		}
		if inside.Held() || holder(t, store, "job") != "" {
			t.Fatal("lock not released after fn returned")
		}
	})

	t.Run("errors", func(t *testing.T) {
		var inside *core.Lock
		err := locks.WithLock(context.Background(), "job", func(ctx context.Context) error {
			inside = core.LockFromContext(ctx)
			return errFn
		})
		if !errors.Is(err, errFn) {
			t.Fatalf("WithLock: %v, want fn's error", err)
		}
		if inside.Held() || holder(t, store, "job") != "" {
			t.Fatal("lock not released after fn failed")
		}
	})

	t.Run("panics", func(t *testing.T) {
		var inside *core.Lock
		got := func() (r any) {
			defer func() { r = recover() }()
			_ = locks.WithLock(context.Background(), "job", func(ctx context.Context) error {
				inside = core.LockFromContext(ctx)
				panic(errFn)
			})
			return nil
		}()
		if got != errFn {
			t.Fatalf("recovered %v, want fn's panic", got)
		}
		if inside.Held() || holder(t, store, "job") != "" {
			t.Fatal("lock not released after fn panicked")
		}
	})

	t.Run("held key", func(t *testing.T) {
		lk := mustAcquire(t, locks, "busy")
		defer lk.Release(context.Background())
		called := false
		err := locks.WithLock(context.Background(), "busy", func(context.Context) error { called = true; return nil })
		if !errors.Is(err, core.ErrNotAcquired) || called {
			t.Fatalf("WithLock on a held key: %v (fn called: %v)", err, called)
		}
	})
}

func TestWithLockLost(t *testing.T) {
	for _, fnReturns := range []string{"nil", "ctx error"} {
		t.Run(fnReturns, func(t *testing.T) {
			procClock := core.NewManualClock(t0)
			storeClock := core.NewManualClock(t0)
			store := core.NewMemoryStore(core.WithMemoryClock(storeClock))
			locks := coretest.NewLocks(t, store, core.WithClock(procClock))

			started := make(chan *core.Lock)
			var cause error
			done := make(chan error, 1)
			go func() {
				done <- locks.WithLock(context.Background(), "job", func(ctx context.Context) error {
					started <- core.LockFromContext(ctx)
					<-ctx.Done()
					cause = context.Cause(ctx)
					if fnReturns == "nil" {
						return nil
					}
					return ctx.Err()
				})
			}()
			lk := <-started
			// The process pauses past its ttl; another holder takes the key;
			// the process's next renewal is refused.
			storeClock.Advance(core.DefaultTTL + time.Second)
			mustAcquire(t, coretest.NewLocks(t, store, core.WithClock(storeClock)), "job")
			procClock.Advance(core.DefaultTTL / 3)

			err := <-done
			var lost *core.LockLostError
			if !errors.As(err, &lost) || lost.Reason != core.LostRefused || lost.Token != lk.Token() {
				t.Fatalf("WithLock after the loss: %v; want a LockLostError", err)
			}
			if !errors.As(cause, &lost) {
				t.Fatalf("fn's ctx ended with cause %v; want a LockLostError", cause)
			}
		})
	}
}

func TestClose(t *testing.T) {
	clock := core.NewManualClock(t0)
	store := core.NewMemoryStore(core.WithMemoryClock(clock))
	locks, err := core.New(store, core.WithClock(clock), core.WithLogger(discard))
	if err != nil {
		t.Fatal(err)
	}
	var held []*core.Lock
	for i := range 5 {
		held = append(held, mustAcquire(t, locks, fmt.Sprintf("k%d", i)))
	}
	if err := held[0].Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Another instance's lock is not this instance's to release.
	foreign := mustAcquire(t, coretest.NewLocks(t, store, core.WithClock(clock)), "foreign")

	if err := locks.Close(context.Background()); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if infos := live(t, store); len(infos) != 1 || infos[0].Owner != foreign.Owner() {
		t.Fatalf("after Close the store holds %+v; want only the other instance's lock", infos)
	}
	for _, lk := range held {
		if lk.Held() || !isDone(lk.Done()) {
			t.Fatalf("%s still held after Close", lk.Key())
		}
		if err := lk.Release(context.Background()); err != nil {
			t.Fatalf("Release after Close: %v", err)
		}
	}
	if n := clock.Pending(); n != 1 { // the other instance's renewal
		t.Fatalf("%d timers pending after Close, want only the other instance's", n)
	}

	if _, err := locks.Acquire(context.Background(), "new"); !errors.Is(err, core.ErrClosed) {
		t.Fatalf("Acquire after Close: %v", err)
	}
	called := false
	if err := locks.WithLock(context.Background(), "new", func(context.Context) error { called = true; return nil }); !errors.Is(err, core.ErrClosed) || called {
		t.Fatalf("WithLock after Close: %v (fn called: %v)", err, called)
	}
	if err := locks.Close(context.Background()); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

// TestCloseEndsWaits: Close ends an Acquire that waits for a held key, at
// once.
func TestCloseEndsWaits(t *testing.T) {
	storeClock := core.NewManualClock(t0)
	store := core.NewMemoryStore(core.WithMemoryClock(storeClock))
	mustAcquire(t, coretest.NewLocks(t, store, core.WithClock(storeClock)), "k")
	waitClock := core.NewManualClock(t0)
	waiter, err := core.New(store, core.WithClock(waitClock), core.WithLogger(discard))
	if err != nil {
		t.Fatal(err)
	}
	res := acquireAsync(waiter, context.Background(), "k", core.WithWait(time.Hour))
	if r, _ := drive(t, waitClock, time.Millisecond, 10*time.Millisecond, res, nil); r != nil {
		t.Fatalf("Acquire returned early: %v", r.err)
	}
	if err := waiter.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Close wakes its waiters: no backoff step has to pass.
	if r := waitFor(t, res); !errors.Is(r.err, core.ErrClosed) {
		t.Fatalf("waiting Acquire after Close: %+v; want ErrClosed at once", r)
	}
}

// TestCloseLeavesNoGoroutine holds 1,000 locks on the system clock, closes,
// and checks that every goroutine of the instance is gone.
func TestCloseLeavesNoGoroutine(t *testing.T) {
	baseline := runtime.NumGoroutine()
	store := core.NewMemoryStore()
	locks, err := core.New(store, core.WithLogger(discard), core.WithDefaultTTL(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	var cancels []context.CancelFunc
	for i := range 1000 {
		ctx := context.Background()
		if i%2 == 0 { // half live in a context of their own
			var cancel context.CancelFunc
			ctx, cancel = context.WithCancel(ctx)
			cancels = append(cancels, cancel)
		}
		if _, err := locks.Acquire(ctx, fmt.Sprintf("k%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	cancels[0]() // one released through its context
	if err := locks.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, cancel := range cancels {
		cancel()
	}
	if n := len(live(t, store)); n != 0 {
		t.Fatalf("%d locks left in the store after Close", n)
	}
	noLeak(t, baseline)
}

// TestManyLocksFewGoroutines: held locks cost a timer heap entry each, not a
// goroutine.
func TestManyLocksFewGoroutines(t *testing.T) {
	const n = 10_000
	t.Run("system clock", func(t *testing.T) {
		baseline := runtime.NumGoroutine()
		locks, err := core.New(core.NewMemoryStore(), core.WithLogger(discard), core.WithDefaultTTL(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		defer locks.Close(context.Background())
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		for i := range n {
			if _, err := locks.Acquire(ctx, fmt.Sprintf("k%d", i)); err != nil {
				t.Fatal(err)
			}
		}
		if got := runtime.NumGoroutine(); got > baseline+5 {
			t.Fatalf("%d goroutines while holding %d locks (baseline %d)", got, n, baseline)
		}
	})
	t.Run("manual clock", func(t *testing.T) {
		clock := core.NewManualClock(t0)
		store := core.NewMemoryStore(core.WithMemoryClock(clock))
		spy := newSpy(store, clock)
		locks := coretest.NewLocks(t, spy, core.WithClock(clock))
		var all []*core.Lock
		for i := range n {
			all = append(all, mustAcquire(t, locks, fmt.Sprintf("k%d", i)))
		}
		if p := clock.Pending(); p != 1 {
			t.Fatalf("%d timers for %d locks, want one", p, n)
		}
		baseline := runtime.NumGoroutine()
		clock.Advance(core.DefaultTTL/3 + time.Second)
		if got := spy.count("renew"); got != n {
			t.Fatalf("%d renewals, want %d", got, n)
		}
		if got := runtime.NumGoroutine(); got > baseline {
			t.Fatalf("%d goroutines after the renewals, %d before", got, baseline)
		}
		for _, lk := range all {
			if !lk.Held() {
				t.Fatalf("%s not held after its renewal", lk.Key())
			}
		}
	})
}

func TestStartupLog(t *testing.T) {
	buf := &coretest.LogBuffer{}
	log := buf.Logger()
	if _, err := core.New(core.NewMemoryStore(), core.WithLogger(log)); err != nil {
		t.Fatal(err)
	}
	if got := buf.Lines("level=WARN", "excludes callers in this process only"); len(got) != 1 {
		t.Fatalf("start-up log on the memory store:\n%s\nwant one warn line naming its limit", buf)
	}

	buf = &coretest.LogBuffer{}
	log = buf.Logger()
	spy := newSpy(core.NewMemoryStore(), core.SystemClock())
	if _, err := core.New(spy, core.WithLogger(log)); err != nil {
		t.Fatal(err)
	}
	if got := buf.Lines("level=INFO", "spyStore"); len(got) != 1 || strings.Contains(buf.String(), "WARN") {
		t.Fatalf("start-up log on another store:\n%s\nwant one info line naming it", buf)
	}
}

// TestCloseDuringAcquire: an acquisition granted while Close runs is handed
// back, and the caller gets ErrClosed.
func TestCloseDuringAcquire(t *testing.T) {
	clock := core.NewManualClock(t0)
	store := core.NewMemoryStore(core.WithMemoryClock(clock))
	spy := newSpy(store, clock)
	locks, err := core.New(spy, core.WithClock(clock), core.WithLogger(discard))
	if err != nil {
		t.Fatal(err)
	}
	spy.beforeAcquire = func(context.Context, string) {
		if err := locks.Close(context.Background()); err != nil {
			t.Error(err)
		}
	}
	lk, err := locks.Acquire(context.Background(), "k")
	if !errors.Is(err, core.ErrClosed) || lk != nil {
		t.Fatalf("Acquire across Close: %v, %v; want ErrClosed", lk, err)
	}
	if h := holder(t, store, "k"); h != "" {
		t.Fatalf("the key granted during Close is still held by %s", h)
	}
}
