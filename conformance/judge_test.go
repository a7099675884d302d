package conformance

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leasehold/leasehold/core"
)

// starve keeps the only P busy for 60ms, so that the lateness meter's
// goroutine runs late by several milliseconds (see package lateness).
func starve() {
	prev := runtime.GOMAXPROCS(1)
	defer runtime.GOMAXPROCS(prev)
	for end := time.Now().Add(60 * time.Millisecond); time.Now().Before(end); {
	}
}

func TestJudgeCallsALateFailureInconclusive(t *testing.T) {
	runs := 0
	late := Case{Name: "late", Fix: "a fix that must not be shown", run: func(t testing.TB, e *env) {
		runs++
		starve()
		t.Fatalf("a lock looked free too early")
	}}
	newStore := func(testing.TB) core.LockStore { return core.NewMemoryStore() }
	// TTL 6ms: the case tolerates 1ms of lateness.
	o := judge(t, late, newStore, Options{TTL: 6 * time.Millisecond})
	msg := strings.Join(o.messages, "\n")
	if runs != 2 {
		t.Errorf("the late case ran %d times; want 2 (once more after the first late failure)", runs)
	}
	if !o.failed || !strings.HasPrefix(msg, "inconclusive: this process ran ") || strings.Contains(msg, "Usual fix") || !strings.Contains(msg, "a lock looked free too early") {
		t.Errorf("verdict = %v; want an inconclusive failure that quotes the case and names no fix", o)
	}

	runs = 0
	proven := Case{Name: "proven", Fix: "the fix", run: func(t testing.TB, e *env) {
		runs++
		starve()
		proof(t, "two owners hold one key")
	}}
	o = judge(t, proven, newStore, Options{TTL: 6 * time.Millisecond})
	if runs != 1 || !o.failed || strings.Contains(strings.Join(o.messages, "\n"), "inconclusive") {
		t.Errorf("a proven failure: ran %d times, verdict %v; want one run and a plain failure", runs, o)
	}

	runs = 0
	onTime := Case{Name: "on-time", Fix: "the fix", run: func(t testing.TB, e *env) {
		runs++
		t.Fatalf("broken")
	}}
	o = judge(t, onTime, newStore, Options{})
	if runs != 1 || !o.failed || !strings.Contains(strings.Join(o.messages, "\n"), "broken") {
		t.Errorf("a failure on time: ran %d times, verdict %v; want one run and the failure", runs, o)
	}
}

// slowStore answers every Acquire after a delay, as a single-writer store
// whose calls queue behind others' does under load.
type slowStore struct {
	core.LockStore
	delay time.Duration
}

func (s slowStore) Acquire(ctx context.Context, key, owner string, ttl time.Duration) (int64, bool, error) {
	time.Sleep(s.delay)
	return s.LockStore.Acquire(ctx, key, owner, ttl)
}

// TestJudgeCallsALateAnswerInconclusive: a check that failed after one of
// the kit's store calls took longer than the case tolerates proves nothing
// (the store may have run it after the ttl): rerun once, then
// inconclusive, with the call's time and no fix. So too a call made late
// after its sleep, because the case's thread stalled between waking and
// calling: neither the sleep nor the call was late by the tolerance, but
// the answer came later than the check allowed (under a CPU hog, bun's
// MySQL store failed renew-by-holder so, with a usual fix, before the kit
// counted a call from its sleep's end). A failure with calls on time stays
// a failure.
func TestJudgeCallsALateAnswerInconclusive(t *testing.T) {
	for _, late := range []struct {
		name        string
		call, stall time.Duration // how long the store takes; how long the thread stalls after its sleep
		want        string        // the verdict's start; "" for a plain failure
	}{
		{"calls on time", 0, 0, ""},
		{"a slow call", 30 * time.Millisecond, 0, "inconclusive: a store call of the case took, or one of its sleeps overslept by, at least "},
		{"a call made after a stall", 0, 30 * time.Millisecond, "inconclusive: a store call of the case took, or one of its sleeps overslept by, at least "},
	} {
		runs := 0
		c := Case{Name: "late-probe", Fix: "a fix that must not be shown", run: func(t testing.TB, e *env) {
			runs++
			e.startTimeline().until(5 * time.Millisecond)
			time.Sleep(late.stall) // the thread, descheduled after its sleep ended
			e.mustBeHeld(t, e.key(), "a key nobody took, which a broken check calls held")
		}}
		newStore := func(testing.TB) core.LockStore { return slowStore{core.NewMemoryStore(), late.call} }
		// TTL 60ms: the case tolerates 10ms.
		o := judge(t, c, newStore, Options{TTL: 60 * time.Millisecond})
		msg := strings.Join(o.messages, "\n")
		switch {
		case late.want == "" && (runs != 1 || !o.failed || strings.Contains(msg, "inconclusive")):
			t.Errorf("%s: ran %d times, verdict %v; want one run and a plain failure", late.name, runs, o)
		case late.want != "" && (runs != 2 || !o.failed || !strings.HasPrefix(msg, late.want) || strings.Contains(msg, "Usual fix")):
			t.Errorf("%s: ran %d times, verdict %v; want two runs and an inconclusive failure naming the delay, without a fix", late.name, runs, o)
		}
	}
}

// TestLostLateIsTimingEvidence: losses whose renewals were not confirmed in
// time are evidence of slow calls for the judge; a refused renewal is not.
func TestLostLateIsTimingEvidence(t *testing.T) {
	lost := func(r core.LossReason) []core.Event {
		return []core.Event{{Type: core.EventLockLost, Err: &core.LockLostError{Key: "k", Reason: r}}}
	}
	for _, c := range []struct {
		reason core.LossReason
		want   time.Duration
	}{{core.LostDeadline, 4 * time.Second}, {core.LostRefused, 0}} {
		r := &recorder{TB: t}
		lostLate(&caseTB{TB: r}, lost(c.reason), 6*time.Second)
		if r.slowest != c.want {
			t.Errorf("a loss %v: the judge is told of a call of %v; want %v", c.reason, r.slowest, c.want)
		}
	}
}

// slowRenewals is a correct store whose renewals come back after delay, as
// on a machine too loaded to answer in time.
type slowRenewals struct {
	core.LockStore
	delay time.Duration
}

func (s slowRenewals) Renew(ctx context.Context, key, owner string, ttl time.Duration) (bool, error) {
	time.Sleep(s.delay)
	return s.LockStore.Renew(ctx, key, owner, ttl)
}

// TestJudgeTimesTheInstancesCalls: in a case run by instances (jobs,
// elections), a correct store whose renewals come back too late makes the
// owner skip or lose; the judge, which times the instances' calls too, says
// inconclusive, never "Usual fix". With renewals on time the case passes.
func TestJudgeTimesTheInstancesCalls(t *testing.T) {
	c, ok := caseNamed("jobs-one-instance")
	if !ok {
		t.Fatal("no case jobs-one-instance")
	}
	const ttl = 600 * time.Millisecond
	for _, delay := range []time.Duration{0, ttl * 5 / 6} {
		shared := slowRenewals{core.NewMemoryStore(), delay} // every instance's client reaches one store
		newStore := func(testing.TB) core.LockStore { return shared }
		o := judge(t, c, newStore, Options{TTL: ttl})
		msg := strings.Join(o.messages, "\n")
		switch {
		case delay == 0 && o.failed:
			t.Errorf("renewals on time: verdict %v; want a pass", o)
		case delay > 0 && (!o.failed || !strings.HasPrefix(msg, "inconclusive: ") || strings.Contains(msg, "Usual fix")):
			t.Errorf("renewals %v late: verdict %v; want an inconclusive failure, without a fix", delay, o)
		}
	}
}

// timingOut is a correct store one Acquire in every ten of which waits for
// its context to end, as a call queued on a machine too busy to answer.
type timingOut struct {
	core.LockStore
	calls *atomic.Int64
}

func (s timingOut) Acquire(ctx context.Context, key, owner string, ttl time.Duration) (int64, bool, error) {
	if s.calls.Add(1)%10 == 0 {
		<-ctx.Done()
		return 0, false, ctx.Err()
	}
	return s.LockStore.Acquire(ctx, key, owner, ttl)
}

// TestJudgeCallsARaceTimeoutInconclusive: race calls that ran out of
// Options.Timeout took that long; the verdict is inconclusive, without the
// fix for a store that fails races, and with calls on time the case passes.
func TestJudgeCallsARaceTimeoutInconclusive(t *testing.T) {
	c, ok := caseNamed("race-distinct-keys")
	if !ok {
		t.Fatal("no case race-distinct-keys")
	}
	for _, stall := range []bool{false, true} {
		var calls atomic.Int64
		store := core.LockStore(core.NewMemoryStore())
		if stall {
			store = timingOut{store, &calls}
		}
		o := judge(t, c, func(testing.TB) core.LockStore { return store }, Options{TTL: 600 * time.Millisecond, Timeout: 300 * time.Millisecond})
		msg := strings.Join(o.messages, "\n")
		switch {
		case !stall && o.failed:
			t.Errorf("calls on time: verdict %v; want a pass", o)
		case stall && (!o.failed || !strings.HasPrefix(msg, "inconclusive: ") || strings.Contains(msg, "Usual fix")):
			t.Errorf("calls that time out: verdict %v; want an inconclusive failure, without a fix", o)
		}
	}
}

// busyAfterAWait is a correct store one Acquire in every ten of which
// fails after waiting longer than the case tolerates, as SQLite's
// SQLITE_BUSY after its busy timeout on a loaded machine.
type busyAfterAWait struct {
	core.LockStore
	calls *atomic.Int64
	wait  time.Duration
}

func (s busyAfterAWait) Acquire(ctx context.Context, key, owner string, ttl time.Duration) (int64, bool, error) {
	if s.calls.Add(1)%10 == 0 {
		time.Sleep(s.wait)
		return 0, false, errors.New("database is locked (5) (SQLITE_BUSY)")
	}
	return s.LockStore.Acquire(ctx, key, owner, ttl)
}

// TestJudgeTimesFailedRaceCalls: a race call that failed after a long wait
// makes the verdict inconclusive; one that failed at once is the store's.
func TestJudgeTimesFailedRaceCalls(t *testing.T) {
	c, ok := caseNamed("race-distinct-keys")
	if !ok {
		t.Fatal("no case race-distinct-keys")
	}
	for _, wait := range []time.Duration{0, 250 * time.Millisecond} {
		var calls atomic.Int64
		store := busyAfterAWait{core.NewMemoryStore(), &calls, wait}
		o := judge(t, c, func(testing.TB) core.LockStore { return store }, Options{TTL: 600 * time.Millisecond})
		msg := strings.Join(o.messages, "\n")
		inconclusive := strings.HasPrefix(msg, "inconclusive: ")
		switch {
		case !o.failed:
			t.Errorf("a store that fails race calls (after %v): verdict %v; want a failure", wait, o)
		case wait == 0 && (inconclusive || !strings.Contains(msg, "Usual fix")):
			t.Errorf("calls that fail at once: verdict %v; want a failure with its fix", o)
		case wait > 0 && (!inconclusive || strings.Contains(msg, "Usual fix")):
			t.Errorf("calls that fail after %v: verdict %v; want an inconclusive failure, without a fix", wait, o)
		}
	}
}

// stalledBatches is a correct store whose first stalls RenewBatch calls
// wait for their context to end, as a call on a machine too loaded to send
// it in time.
type stalledBatches struct {
	*core.MemoryStore
	stalls *atomic.Int64
}

func (s stalledBatches) RenewBatch(ctx context.Context, leases []core.Lease) ([]bool, error) {
	if s.stalls.Add(-1) >= 0 {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return s.MemoryStore.RenewBatch(ctx, leases)
}

// TestJudgeTimesBatchCalls: a batch call that ran out of Options.Timeout
// took that long, and a loaded machine explains it. batch-max-size, which
// calls any error of its one big call a size the store cannot take, runs
// again after such a timeout, and passes when the second call is on time
// (it failed with the size's fix before it timed its call: bun's
// PostgreSQL store failed so once under CI's load); a call that runs out
// every time is inconclusive, without the fix. A batch that fails at once
// is still the store's failure.
func TestJudgeTimesBatchCalls(t *testing.T) {
	c, ok := caseNamed("batch-max-size")
	if !ok {
		t.Fatal("no case batch-max-size")
	}
	for _, stalls := range []int64{0, 1, 2} {
		var left atomic.Int64
		left.Store(stalls)
		store := stalledBatches{core.NewMemoryStore(), &left}
		o := judge(t, c, func(testing.TB) core.LockStore { return store }, Options{TTL: 600 * time.Millisecond, Timeout: 300 * time.Millisecond})
		msg := strings.Join(o.messages, "\n")
		switch {
		case stalls < 2 && o.failed:
			t.Errorf("%d batch calls out of time, then calls on time: verdict %v; want a pass", stalls, o)
		case stalls == 2 && (!o.failed || !strings.HasPrefix(msg, "inconclusive: ") || strings.Contains(msg, "Usual fix")):
			t.Errorf("every batch call out of time: verdict %v; want an inconclusive failure, without a fix", o)
		}
	}
	o := judge(t, c, func(testing.TB) core.LockStore { return tooSmallBatches{core.NewMemoryStore()} }, Options{TTL: 600 * time.Millisecond, Timeout: 300 * time.Millisecond})
	if msg := strings.Join(o.messages, "\n"); !o.failed || strings.HasPrefix(msg, "inconclusive: ") || !strings.Contains(msg, "Usual fix") {
		t.Errorf("a batch refused at once: verdict %v; want a failure with its fix", o)
	}
}

// tooSmallBatches refuses at once a batch of more than half its MaxBatch,
// as a store whose statement cannot carry the batch it declares.
type tooSmallBatches struct{ *core.MemoryStore }

func (s tooSmallBatches) RenewBatch(ctx context.Context, leases []core.Lease) ([]bool, error) {
	if len(leases) > s.MaxBatch()/2 {
		return nil, errors.New("too many parameters")
	}
	return s.MemoryStore.RenewBatch(ctx, leases)
}

// stalledAfterStop is a correct store whose Acquire, when the kit stopped
// it at its look at its context, takes until its deadline once let go, the
// first stalls times: a call that the kit held while the lock expired and a
// takeover ran, then resumed on a machine too loaded to finish it in time.
type stalledAfterStop struct {
	*core.MemoryStore
	stalls *atomic.Int64
}

func (s stalledAfterStop) Acquire(ctx context.Context, key, owner string, ttl time.Duration) (int64, bool, error) {
	// A watcher goroutine that looks at the context, as pgx's and
	// database/sql's do: the kit may stop it rather than the call.
	stop := context.AfterFunc(ctx, func() {})
	defer stop()
	_ = ctx.Err() // the look before the call's round trip
	if sc, ok := ctx.(*steered); ok && sc.stopped.Load() > 0 && s.stalls.Add(-1) >= 0 {
		<-ctx.Done()
		return 0, false, ctx.Err()
	}
	return s.MemoryStore.Acquire(ctx, key, owner, ttl)
}

// TestJudgeTimesSteeredCalls: a steered call that failed after running
// long, not counting the time the kit held it, is a loaded machine's
// failure as much as the store's. Under a busy loop per core,
// steer-acquire-takeover failed correct MySQL stores (database/sql and bun)
// with the fix for a store error, an Acquire let go after its stop having
// run out of its deadline; it now runs again and passes, or, if the stall
// recurs, is inconclusive.
func TestJudgeTimesSteeredCalls(t *testing.T) {
	c, ok := caseNamed("steer-acquire-takeover")
	if !ok {
		t.Fatal("no case steer-acquire-takeover")
	}
	for _, stalls := range []int64{0, 1, 1 << 30} {
		var left atomic.Int64
		left.Store(stalls)
		store := stalledAfterStop{core.NewMemoryStore(), &left}
		o := judge(t, c, func(testing.TB) core.LockStore { return store }, Options{TTL: 600 * time.Millisecond, Timeout: 300 * time.Millisecond})
		msg := strings.Join(o.messages, "\n")
		switch {
		case stalls <= 1 && o.failed:
			t.Errorf("%d stopped Acquire calls out of time once let go: verdict %v; want a pass", stalls, o)
		case stalls > 1 && (!o.failed || !strings.HasPrefix(msg, "inconclusive: ") || strings.Contains(msg, "Usual fix")):
			t.Errorf("every stopped Acquire out of time once let go: verdict %v; want an inconclusive failure, without a fix", o)
		}
	}
}

// TestInstancesClocksStartWithTheirStores: a cluster's instances open
// their stores one after another, which takes seconds on a loaded machine
// (a client's handshake, a dialect's version query). A correct store whose
// clients are that slow to open must still pass the election cases: the
// instances' clocks catch up before the first campaign, so that its lease
// is dated when it was sent. (Before, a first campaign still on its way
// when the clock caught up lost its lease at once, for a "Usual fix" on a
// correct store: bun's MySQL kit under a CPU hog.)
func TestInstancesClocksStartWithTheirStores(t *testing.T) {
	const ttl = 600 * time.Millisecond
	for _, name := range []string{"election-one-leader", "jobs-handover-on-close"} {
		c, ok := caseNamed(name)
		if !ok {
			t.Fatalf("no case %s", name)
		}
		// Each Acquire takes a few of the pumps' steps (ttl/50), well
		// within the tolerance, so that the clocks move while a campaign
		// is on its way, as on a real server.
		shared := slowStore{core.NewMemoryStore(), ttl / 15}
		var opened atomic.Int64
		newStore := func(testing.TB) core.LockStore {
			if opened.Add(1) > 1 {
				time.Sleep(ttl) // every client but the case's first
			}
			return shared
		}
		if o := judge(t, c, newStore, Options{TTL: ttl}); o.failed {
			t.Errorf("%s, stores that take %v to open: verdict %v; want a pass", name, ttl, o)
		}
	}
}
