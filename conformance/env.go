package conformance

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leasehold/leasehold/core"
)

// holdTTL is the ttl of locks in cases that do not test expiry: long enough
// that no store, however slow, lets them expire while the case runs.
const holdTTL = time.Minute

// env is what a case works with: the stores, the options with their
// defaults filled, and helpers that call the stores and report failures.
// Its helpers call t only from the case's own goroutine.
//
// A case's calls go through store, the first store newStore returned for
// it, except those of owners bound to a store of their own (see racers): a
// racing caller, like an instance of a service, calls through a store
// value, and so a client, of its own.
type env struct {
	store core.LockStore
	// open returns another store from newStore, over the same data. Call
	// it from the case's goroutine only: newStore may call t.
	open func() core.LockStore
	opts Options
	name string // the case's name, part of every key
	// late is how long after its ttl the store under test may still hold
	// a lock (core.ExpiryLateness); the checks that a lock is gone wait
	// that much longer, the checks that it is held do not move.
	late func(ttl time.Duration) time.Duration

	start time.Time // when the case started
	// With AdvanceTime: how far the case has moved the store's clock, and
	// how far it has begun to (see advance).
	moved, moving atomic.Int64
	// overslept tells the judge how late a sleep of the case's timeline
	// woke: lateness the case itself suffered, which the meter's own
	// goroutine may not see (a goroutine waiting in a long run queue).
	overslept func(d time.Duration)

	mu      sync.Mutex
	second  core.LockStore            // the store of owners elsewhere, opened on first use
	callers []core.LockStore          // stores opened for racing callers, reused by later races
	stores  map[string]core.LockStore // owner → the store its calls go through, if not store
	due     time.Time                 // when the timeline meant the next store call to be made (see timeline.until); zero if none
}

func newEnv(opts Options, name string) *env {
	return &env{opts: opts, name: name, start: time.Now(), stores: map[string]core.LockStore{}}
}

// storeOf returns the store that owner's calls go through.
func (e *env) storeOf(owner string) core.LockStore {
	e.mu.Lock()
	defer e.mu.Unlock()
	if s, ok := e.stores[owner]; ok {
		return s
	}
	return e.store
}

// ownerElsewhere returns a fresh owner whose calls go through the case's
// second store (opened from newStore on first use), as those of another
// instance of a service go through a client of its own: a lock that one
// client holds must look held, and a key it freed free, through any other.
// label makes it readable in failure messages.
func (e *env) ownerElsewhere(label string) string {
	owner := e.owner(label)
	if e.second == nil {
		s := e.open()
		e.mu.Lock()
		e.second = s
		e.mu.Unlock()
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.stores[owner] = e.second
	return owner
}

// racers returns n fresh owners, each bound to a store of the case's
// racing callers: owner i to caller (i + shift) mod Options.Callers. The
// callers' stores are opened (from newStore) the first time a race needs
// them and reused by the case's later races, so that a driver's client-side
// state (a cache, a counter, a session) is exercised as the instances of a
// service exercise it, and the winners of successive rounds come from
// different clients.
func (e *env) racers(label string, n, shift int) []string {
	owners := e.owners(label, n)
	want := min(n, e.opts.Callers)
	for len(e.callers) < want {
		s := e.open()
		e.mu.Lock()
		e.callers = append(e.callers, s)
		e.mu.Unlock()
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for i, o := range owners {
		e.stores[o] = e.callers[(i+shift)%len(e.callers)]
	}
	return owners
}

// clocks returns the time on the store's clock since the case started:
// how far the case has moved it with AdvanceTime, or the real time
// elapsed; and, in real time, how far the wall clock has moved ahead of
// that since (negative: behind), as when it is stepped. Both come from one
// reading of the machine's clocks.
//
// With AdvanceTime, ahead is the part of a move in progress: the store's
// clock may already read that much more than now.
func (e *env) clocks() (now, ahead time.Duration) {
	if e.opts.AdvanceTime != nil {
		moved := e.moved.Load()
		return time.Duration(moved), time.Duration(e.moving.Load() - moved)
	}
	t := time.Now()
	now = t.Sub(e.start)
	return now, t.Round(0).Sub(e.start.Round(0)) - now
}

// advance moves the store's clock by d through Options.AdvanceTime. The
// move counts in moving before it starts and in moved once it is done, so
// that a call made meanwhile, by a goroutine of the case, is bounded on
// the store's clock by both (see clocks).
func (e *env) advance(d time.Duration) {
	e.moving.Add(int64(d))
	e.opts.AdvanceTime(d)
	e.moved.Add(int64(d))
}

func random() string {
	return fmt.Sprintf("%012x", rand.Uint64()&(1<<48-1))
}

// key returns a fresh key, "<prefix>:<case>:<random>".
func (e *env) key() string {
	return e.opts.KeyPrefix + ":" + e.name + ":" + random()
}

// owner returns a fresh owner; label makes it readable in failure messages.
func (e *env) owner(label string) string {
	return label + "-" + random()
}

// ctx returns the context of one store call, bounded by Options.Timeout.
func (e *env) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), e.opts.Timeout)
}

// timed runs one store call of the kit's and notes how late its answer
// came (see recorder.noteCall): a call that came back late may have been
// run by the store late too, after a lock's ttl, and a check it failed
// proves nothing. It counts from when the call was made or, after a sleep
// of the case's timeline, from when the sleep should have ended, whichever
// is earlier: a check's margin is spent by the whole delay from that moment
// to the answer, the sleep's oversleep, the call, and any stall of the
// case's thread between the two, which neither the sleep nor the call
// would count (under a CPU hog, the case's thread can wait in the run
// queue for hundreds of milliseconds while the meter's goroutine runs on
// time).
func (e *env) timed(t testing.TB, call func()) {
	start := time.Now()
	e.mu.Lock()
	due := e.due
	e.due = time.Time{}
	e.mu.Unlock()
	if !due.IsZero() && due.Before(start) {
		start = due
	}
	call()
	noteCall(t, time.Since(start))
}

// callFailedAfter is callFailed for a call the kit timed itself, which
// took took: the judge weighs a call that failed after a long run (out of
// its deadline on a loaded machine, say) as it weighs a slow answer.
func callFailedAfter(t testing.TB, call string, err error, took time.Duration) {
	t.Helper()
	noteCall(t, took)
	callFailed(t, call, err)
}

func callFailed(t testing.TB, call string, err error) {
	t.Helper()
	failWith(t, fixStoreError, "%s returned an error: %v; the kit expects a working store to answer this call (only a failed call, such as a cancelled context or a lost connection, may return an error)", call, err)
}

// acquire calls Acquire and fails the case if it returns an error.
func (e *env) acquire(t testing.TB, key, owner string, ttl time.Duration) (int64, bool) {
	t.Helper()
	ctx, cancel := e.ctx()
	defer cancel()
	var (
		token int64
		ok    bool
		err   error
	)
	e.timed(t, func() { token, ok, err = e.storeOf(owner).Acquire(ctx, key, owner, ttl) })
	if err != nil {
		callFailed(t, fmt.Sprintf("Acquire(%s, %q, %v)", show(key), owner, ttl), err)
	}
	return token, ok
}

// renew calls Renew and fails the case if it returns an error.
func (e *env) renew(t testing.TB, key, owner string, ttl time.Duration) bool {
	t.Helper()
	ctx, cancel := e.ctx()
	defer cancel()
	var (
		ok  bool
		err error
	)
	e.timed(t, func() { ok, err = e.storeOf(owner).Renew(ctx, key, owner, ttl) })
	if err != nil {
		callFailed(t, fmt.Sprintf("Renew(%s, %q, %v)", show(key), owner, ttl), err)
	}
	return ok
}

// release calls Release and fails the case if it returns an error.
func (e *env) release(t testing.TB, key, owner string) bool {
	t.Helper()
	ctx, cancel := e.ctx()
	defer cancel()
	var (
		ok  bool
		err error
	)
	e.timed(t, func() { ok, err = e.storeOf(owner).Release(ctx, key, owner) })
	if err != nil {
		callFailed(t, fmt.Sprintf("Release(%s, %q)", show(key), owner), err)
	}
	return ok
}

// mustAcquire acquires a key that should be free; what says why it should be.
func (e *env) mustAcquire(t testing.TB, key, owner string, ttl time.Duration, what string) int64 {
	t.Helper()
	token, ok := e.acquire(t, key, owner, ttl)
	if !ok {
		t.Fatalf("Acquire of %s by %s returned not acquired; the contract requires acquired: %s", show(key), owner, what)
	}
	e.cleanupRelease(t, key, owner)
	return token
}

// mustRenew renews a lock the owner should hold; what says why.
func (e *env) mustRenew(t testing.TB, key, owner string, ttl time.Duration, what string) {
	t.Helper()
	if !e.renew(t, key, owner, ttl) {
		t.Fatalf("Renew of %s by its holder %s returned false; the contract requires true: %s", show(key), owner, what)
	}
}

// mustRelease releases a lock the owner should hold; what says why.
func (e *env) mustRelease(t testing.TB, key, owner string, what string) {
	t.Helper()
	if !e.release(t, key, owner) {
		t.Fatalf("Release of %s by its holder %s returned false; the contract requires true: %s", show(key), owner, what)
	}
}

// mustBeHeld checks that some live lock holds key, by trying to acquire it
// as a new owner, which must fail. what says why the key should be held.
func (e *env) mustBeHeld(t testing.TB, key string, what string) {
	t.Helper()
	probe := e.ownerElsewhere("probe")
	if _, ok := e.acquire(t, key, probe, holdTTL); ok {
		e.cleanupRelease(t, key, probe)
		t.Fatalf("Acquire of %s by a new owner returned acquired, so the key was free; the contract requires it to be held: %s", show(key), what)
	}
}

// mustBeFree checks that key is free by acquiring it as a new owner, and
// returns that owner and its token. what says why the key should be free.
func (e *env) mustBeFree(t testing.TB, key string, ttl time.Duration, what string) (string, int64) {
	t.Helper()
	probe := e.ownerElsewhere("taker")
	token, ok := e.acquire(t, key, probe, ttl)
	if !ok {
		t.Fatalf("Acquire of %s by a new owner returned not acquired, so the key was still held; the contract requires it to be free: %s", show(key), what)
	}
	e.cleanupRelease(t, key, probe)
	return probe, token
}

// cleanupRelease releases key for owner when the case ends, whatever its
// outcome, so that a failed case leaves no long lock on a shared server.
// The answer is ignored: the case may have released the lock already.
func (e *env) cleanupRelease(t testing.TB, key, owner string) {
	t.Cleanup(func() {
		ctx, cancel := e.ctx()
		defer cancel()
		_, _ = e.storeOf(owner).Release(ctx, key, owner)
	})
}

// The kit's timing, stated here once (and for users on Options.TTL): a case
// that tests expiry looks at a lock twice, counted from when it was taken or
// last renewed. At heldCheck, TTL/2, well before its expiry, the lock must
// still be held; at goneCheck, TTL + TTL/6, a sixth of a ttl past its
// expiry, it must be free. The sixth absorbs the round trip of the call
// that took the lock and the store's clock resolution; without AdvanceTime
// a call must come back well within TTL/3 for the checks to mean anything.
func heldCheck(ttl time.Duration) time.Duration { return ttl / 2 }

// goneCheck: see heldCheck.
func goneCheck(ttl time.Duration) time.Duration { return ttl + ttl/6 }

// gone is goneCheck for the store under test: later by the expiry
// lateness the store declares (see core.ExpiryPrecisioner).
func (e *env) gone(ttl time.Duration) time.Duration {
	return goneCheck(ttl) + e.lateness(ttl)
}

// lateness is how late the store declares it may free a lock of ttl (see
// core.ExpiryPrecisioner), 0 without a declaration. Only waits for a lock
// to be gone add it, never checks that a lock is still held.
func (e *env) lateness(ttl time.Duration) time.Duration {
	if e.late == nil {
		return 0
	}
	return e.late(ttl)
}

// lateCheck, TTL - TTL/6 after an Acquire was sent, is when expiry-frees-key
// checks that the lock is still held, to catch a lock that expires early by
// more than a sixth of its ttl (a ttl rounded down to whole seconds). A
// probe that finds the key free there fails the case only if it returned
// before TTL after the Acquire was sent: then the store freed the lock
// early, whatever the latency. A probe that comes back later proves
// nothing, so the check cannot fail on a slow store or a busy machine.
func lateCheck(ttl time.Duration) time.Duration { return ttl - ttl/6 }

// timeline lets time pass for a case, measured from the moment it starts:
// on the store's clock through Options.AdvanceTime, or in real time.
type timeline struct {
	e     *env
	start time.Time     // real time: when the timeline started
	moved time.Duration // AdvanceTime: how far the clock has moved since
}

// startTimeline starts a timeline now. Start it after the calls whose ttl it
// measures have returned: the store started their ttl no later than that.
func (e *env) startTimeline() *timeline {
	return &timeline{e: e, start: time.Now()}
}

// until lets time pass until d after the timeline started.
func (tl *timeline) until(d time.Duration) {
	if tl.e.opts.AdvanceTime != nil {
		if d > tl.moved {
			tl.e.advance(d - tl.moved)
			tl.moved = d
		}
		return
	}
	target := tl.start.Add(d)
	tl.e.mu.Lock()
	tl.e.due = target
	tl.e.mu.Unlock()
	if rest := time.Until(target); rest > 0 {
		time.Sleep(rest)
		if tl.e.overslept != nil {
			tl.e.overslept(time.Since(target))
		}
	}
}

// elapsed returns how much time has passed since the timeline started: how
// far the case has moved the store's clock, or the real time since.
func (tl *timeline) elapsed() time.Duration {
	if tl.e.opts.AdvanceTime != nil {
		return tl.moved
	}
	return time.Since(tl.start)
}

// race runs f(0) … f(n-1) in n goroutines released together once all of them
// have started, and returns when all have returned. f must not call t.
func race(n int, f func(i int)) {
	var ready, done sync.WaitGroup
	start := make(chan struct{})
	ready.Add(n)
	done.Add(n)
	for i := range n {
		go func() {
			defer done.Done()
			ready.Done()
			<-start
			f(i)
		}()
	}
	ready.Wait()
	close(start)
	done.Wait()
}

// result is the answer of one store call made in a race.
type result struct {
	token int64
	ok    bool
	err   error
	took  time.Duration // how long the call took, where the race timed it
}

// timeFrom records that the call started at start and has just returned.
func (r *result) timeFrom(start time.Time) { r.took = time.Since(start) }

// owners returns n fresh owners.
func (e *env) owners(label string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = e.owner(fmt.Sprintf("%s%d", label, i))
	}
	return out
}

// winners checks a race's answers for errors and returns the indexes of the
// callers that acquired. what describes the race for messages. The judge
// hears how long each failed call took (one that ran out of Options.Timeout
// took at least that): an error after a long wait, such as SQLite's
// SQLITE_BUSY after its busy timeout, is a loaded machine's, not proof of
// a store that fails races.
func (e *env) winners(t testing.TB, res []result, what string) []int {
	t.Helper()
	var won []int
	var errs []error
	for i, r := range res {
		if r.err != nil {
			errs = append(errs, r.err)
			took := r.took
			if errors.Is(r.err, context.DeadlineExceeded) {
				took = max(took, e.opts.Timeout)
			}
			noteCall(t, took)
		}
		if r.ok && r.err == nil {
			won = append(won, i)
		}
	}
	if len(errs) > 0 {
		failWith(t, "retry serialisation failures and deadlocks inside the store, or make the operation one atomic statement that cannot conflict, and give the pool at least Options.Callers connections.",
			"%d of %d concurrent calls (%s) returned an error, the first: %v; the contract requires a store to decide concurrent calls, not to fail them", len(errs), len(res), what, errs[0])
	}
	return won
}
