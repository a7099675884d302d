package core_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/leasehold/leasehold/core"
	"github.com/leasehold/leasehold/core/coretest"
)

// recorder is an Observer that writes down, in order, every operation that
// starts and ends, with the operation it was started inside (the one whose
// context it received).
type recorder struct {
	name string // tells observers apart in a shared log

	mu   *sync.Mutex
	log  *[]string
	open map[*recordedOp]bool
}

type recordedOp struct {
	op   core.Op
	ends int
}

type recorderKey struct{}

func newRecorder() *recorder {
	return &recorder{mu: new(sync.Mutex), log: new([]string), open: make(map[*recordedOp]bool)}
}

func (r *recorder) Start(ctx context.Context, op core.Op) (context.Context, func(bool, error)) {
	line := fmt.Sprintf("%sstart %s %s %s", r.name, op.Type, op.Key, kindOf(op))
	if parent, ok := ctx.Value(recorderKey{}).(*recordedOp); ok {
		line += " in " + parent.op.Type.String()
	}
	rec := &recordedOp{op: op}
	r.mu.Lock()
	*r.log = append(*r.log, line)
	r.open[rec] = true
	r.mu.Unlock()
	return context.WithValue(ctx, recorderKey{}, rec), func(ok bool, err error) {
		r.mu.Lock()
		defer r.mu.Unlock()
		rec.ends++
		delete(r.open, rec)
		*r.log = append(*r.log, fmt.Sprintf("%send %s %s ok=%v err=%s", r.name, op.Type, op.Key, ok, describeErr(err)))
	}
}

func kindOf(op core.Op) string {
	if op.Kind == 0 {
		return "-"
	}
	return op.Kind.String()
}

// describeErr names an error briefly: its kind and reason, not its text.
func describeErr(err error) string {
	var lost *core.LockLostError
	var skipped *core.SkippedError
	switch {
	case err == nil:
		return "-"
	case errors.As(err, &lost):
		return "lost(" + lost.Reason.String() + ")"
	case errors.As(err, &skipped):
		return "skipped(" + skipped.Reason.String() + ")"
	case errors.Is(err, core.ErrNotAcquired):
		return "not-acquired"
	}
	return err.Error()
}

// take returns the lines written since the last take.
func (r *recorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := *r.log
	*r.log = nil
	return out
}

// check fails the test unless the lines since the last take are want, and
// every operation that started has ended exactly once (ended ones are gone
// from open; ends is counted for doubles).
func (r *recorder) check(t *testing.T, want ...string) {
	t.Helper()
	if got := r.take(); !slices.Equal(got, want) {
		t.Fatalf("observed:\n\t%s\nwant:\n\t%s", strings.Join(got, "\n\t"), strings.Join(want, "\n\t"))
	}
}

// stillOpen returns the operations that started and have not ended.
func (r *recorder) stillOpen() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for rec := range r.open {
		out = append(out, rec.op.Type.String()+" "+rec.op.Key)
	}
	slices.Sort(out)
	return out
}

// ctxStore checks that every store call receives the context the observer
// gave for it.
type ctxStore struct {
	core.LockStore
	t *testing.T
}

func (s ctxStore) expect(ctx context.Context, typ core.OpType, key string) {
	rec, ok := ctx.Value(recorderKey{}).(*recordedOp)
	if !ok || rec.op.Type != typ || rec.op.Key != key {
		s.t.Errorf("store %s %q got the context of %+v", typ, key, rec)
	}
}

func (s ctxStore) Acquire(ctx context.Context, key, owner string, ttl time.Duration) (int64, bool, error) {
	s.expect(ctx, core.OpAcquire, key)
	return s.LockStore.Acquire(ctx, key, owner, ttl)
}

func (s ctxStore) Renew(ctx context.Context, key, owner string, ttl time.Duration) (bool, error) {
	s.expect(ctx, core.OpRenew, key)
	return s.LockStore.Renew(ctx, key, owner, ttl)
}

func (s ctxStore) Release(ctx context.Context, key, owner string) (bool, error) {
	s.expect(ctx, core.OpRelease, key)
	return s.LockStore.Release(ctx, key, owner)
}

// TestObserverSeesEveryStoreCallAndHold drives a lock through an
// acquisition, a held key, renewals, a release, a refusal and a deadline,
// and checks each store call and hold with its answer.
func TestObserverSeesEveryStoreCallAndHold(t *testing.T) {
	ctx := context.Background()
	storeClock, procClock := core.NewManualClock(t0), core.NewManualClock(t0)
	mem := core.NewMemoryStore(core.WithMemoryClock(storeClock))
	spy := newSpy(mem, procClock)
	rec := newRecorder()
	l := coretest.NewLocks(t, ctxStore{spy, t}, core.WithClock(procClock), core.WithObserver(rec))
	other := coretest.NewLocks(t, mem, core.WithClock(storeClock))
	both := func(d time.Duration) { storeClock.Advance(d); procClock.Advance(d) }

	lk := mustAcquire(t, l, "k", core.WithTTL(30*time.Second))
	rec.check(t,
		"start acquire k lock", "end acquire k ok=true err=-",
		"start hold k lock")
	if _, err := l.Acquire(ctx, "k"); !errors.Is(err, core.ErrNotAcquired) {
		t.Fatalf("second Acquire: %v", err)
	}
	rec.check(t, "start acquire k lock", "end acquire k ok=false err=-")
	both(10 * time.Second)
	rec.check(t, "start renew k lock", "end renew k ok=true err=-")
	if err := lk.Release(ctx); err != nil {
		t.Fatal(err)
	}
	rec.check(t,
		"start release k lock", "end release k ok=true err=-",
		"end hold k ok=true err=-")

	// Refused: the process pauses past the ttl, another instance takes the
	// key, and the next renewal is refused.
	mustAcquire(t, l, "r", core.WithTTL(30*time.Second))
	rec.take()
	storeClock.Advance(31 * time.Second)
	mustAcquire(t, other, "r")
	procClock.Advance(10 * time.Second)
	rec.check(t,
		"start renew r lock", "end renew r ok=false err=-",
		"end hold r ok=false err=lost(refused by the store)")

	// Deadline: every renewal fails until ttl has passed.
	mustAcquire(t, l, "d", core.WithTTL(30*time.Second))
	rec.take()
	down := errors.New("store down")
	spy.setRenewErr(down)
	both(29 * time.Second) // renewals at 10s, then retries every 3s
	both(time.Second)
	got := rec.take()
	want := "end hold d ok=false err=lost(ttl passed without a confirmed renewal)"
	if got[len(got)-1] != want || !slices.Contains(got, "end renew d ok=false err=store down") {
		t.Fatalf("observed:\n\t%s\nwant failed renewals, then %q", strings.Join(got, "\n\t"), want)
	}
	spy.setRenewErr(nil)

	// A release that finds the lock gone ends the hold as lost.
	lk = mustAcquire(t, l, "gone", core.WithTTL(30*time.Second))
	rec.take()
	storeClock.Advance(31 * time.Second)
	var lost *core.LockLostError
	if err := lk.Release(ctx); !errors.As(err, &lost) {
		t.Fatalf("Release of an expired lock: %v", err)
	}
	rec.check(t,
		"start release gone lock", "end release gone ok=false err=-",
		"end hold gone ok=false err=lost(refused by the store)")
	if open := rec.stillOpen(); len(open) != 0 {
		t.Fatalf("operations that never ended: %q", open)
	}
}

// TestObserverRefusedGrantIsAHoldThatEndsAtOnce: a grant leasehold refuses
// (a token that did not grow) starts a hold and ends it with the reason,
// and the hand-back is observed too.
func TestObserverRefusedGrantIsAHoldThatEndsAtOnce(t *testing.T) {
	clock := core.NewManualClock(t0)
	spy := newSpy(core.NewMemoryStore(core.WithMemoryClock(clock)), clock)
	spy.tokenFn = func(string, int64) int64 { return 0 }
	rec := newRecorder()
	l := coretest.NewLocks(t, spy, core.WithClock(clock), core.WithObserver(rec))
	if _, err := l.Acquire(context.Background(), "k"); !errors.Is(err, core.ErrBrokenStore) {
		t.Fatalf("Acquire: %v", err)
	}
	got := rec.take()
	want := []string{
		"start acquire k lock", "end acquire k ok=true err=-",
		"start hold k lock",
		"start release k lock", "end release k ok=true err=-",
	}
	if len(got) != len(want)+1 || !slices.Equal(got[:len(want)], want) || !strings.HasPrefix(got[len(want)], "end hold k ok=false err=leasehold: store broke the contract") {
		t.Fatalf("observed:\n\t%s", strings.Join(got, "\n\t"))
	}
}

// TestObserverWithLockNestsItsCalls: the store calls of a WithLock run in
// its context, and so does the callback; a lock lost during the callback
// and a panicking callback end the operation with what happened.
func TestObserverWithLockNestsItsCalls(t *testing.T) {
	ctx := context.Background()
	clock := core.NewManualClock(t0)
	spy := newSpy(core.NewMemoryStore(core.WithMemoryClock(clock)), clock)
	rec := newRecorder()
	l := coretest.NewLocks(t, spy, core.WithClock(clock), core.WithObserver(rec))

	err := l.WithLock(ctx, "k", func(ctx context.Context) error {
		if r, _ := ctx.Value(recorderKey{}).(*recordedOp); r == nil || r.op.Type != core.OpHold {
			t.Errorf("the callback's context is not the observed one: %+v", r)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	rec.check(t,
		"start with-lock k lock",
		"start acquire k lock in with-lock", "end acquire k ok=true err=-",
		"start hold k lock in with-lock",
		"start release k lock in hold", "end release k ok=true err=-",
		"end hold k ok=true err=-",
		"end with-lock k ok=true err=-")

	// Held elsewhere: the callback never runs.
	held := mustAcquire(t, l, "held")
	rec.take()
	err = l.WithLock(ctx, "held", func(context.Context) error { return nil })
	rec.check(t,
		"start with-lock held lock",
		"start acquire held lock in with-lock", "end acquire held ok=false err=-",
		"end with-lock held ok=false err=not-acquired")
	_ = held.Release(ctx)
	rec.take()

	// Lost by deadline during the callback.
	spy.setRenewErr(errors.New("store down"))
	err = l.WithLock(ctx, "slow", func(ctx context.Context) error {
		clock.Advance(30 * time.Second)
		<-ctx.Done()
		return nil
	}, core.WithTTL(30*time.Second))
	var lost *core.LockLostError
	if !errors.As(err, &lost) || lost.Reason != core.LostDeadline {
		t.Fatalf("WithLock: %v", err)
	}
	got := rec.take()
	if last := got[len(got)-1]; last != "end with-lock slow ok=true err=lost(ttl passed without a confirmed renewal)" {
		t.Fatalf("observed:\n\t%s", strings.Join(got, "\n\t"))
	}
	spy.setRenewErr(nil)

	func() {
		defer func() {
			if r := recover(); r != "boom" {
				t.Fatalf("recovered %v, want the callback's panic", r)
			}
		}()
		_ = l.WithLock(ctx, "p", func(context.Context) error { panic("boom") })
	}()
	rec.check(t,
		"start with-lock p lock",
		"start acquire p lock in with-lock", "end acquire p ok=true err=-",
		"start hold p lock in with-lock",
		"start release p lock in hold", "end release p ok=true err=-",
		"end hold p ok=true err=-",
		"end with-lock p ok=true err=leasehold: the function panicked")
	if open := rec.stillOpen(); len(open) != 0 {
		t.Fatalf("operations that never ended: %q", open)
	}
}

// TestObserverSeesJobTicksAndElections: a job's tick on the instance that
// owns its lease runs under a job lease and a run lock, the other
// instance's tick is skipped, and an election's lease is a leadership.
func TestObserverSeesJobTicksAndElections(t *testing.T) {
	ctx := context.Background()
	clock := core.NewManualClock(t0)
	store := core.NewMemoryStore(core.WithMemoryClock(clock))
	owner, other := newRecorder(), newRecorder()
	lo := coretest.NewLocks(t, store, core.WithClock(clock), core.WithObserver(owner))
	lt := coretest.NewLocks(t, store, core.WithClock(clock), core.WithObserver(other))
	// Close keeps a job lease for a second after its last run started.
	t.Cleanup(func() { clock.Advance(time.Second) })
	job := func(ctx context.Context) error {
		if core.LockFromContext(ctx) == nil {
			t.Error("no run lock in the job's context")
		}
		return nil
	}
	opts := []core.JobOption{core.WithJobKey("j"), core.OnOneInstance(), core.WithoutOverlapping()}
	jo, err := lo.Job(job, opts...)
	if err != nil {
		t.Fatal(err)
	}
	jt, err := lt.Job(job, opts...)
	if err != nil {
		t.Fatal(err)
	}

	if err := jo.Run(ctx); err != nil {
		t.Fatal(err)
	}
	owner.check(t,
		"start job-run j -",
		"start acquire j:owner job-lease in job-run", "end acquire j:owner ok=true err=-",
		"start hold j:owner job-lease in job-run",
		"start acquire j run-lock in job-run", "end acquire j ok=true err=-",
		"start hold j run-lock in job-run",
		"start release j run-lock in hold", "end release j ok=true err=-",
		"end hold j ok=true err=-",
		"end job-run j ok=true err=-")
	if err := jt.Run(ctx); !errors.Is(err, core.ErrSkipped) {
		t.Fatalf("the other instance's tick: %v", err)
	}
	other.check(t,
		"start job-run j -",
		"start acquire j:owner job-lease in job-run", "end acquire j:owner ok=false err=-",
		"end job-run j ok=false err=skipped(it runs on another instance)")

	e, err := lt.Elect("leader", core.Campaign{TTL: 9 * time.Second, OnAcquired: func(*core.Lock) error { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	other.check(t, "start acquire leader leadership", "end acquire leader ok=true err=-", "start hold leader leadership")
	if err := e.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	other.check(t, "start release leader leadership", "end release leader ok=true err=-", "end hold leader ok=true err=-")
}

// TestObserversNestInOrder: each observer's context reaches the next, and
// they end in reverse order.
func TestObserversNestInOrder(t *testing.T) {
	clock := core.NewManualClock(t0)
	first := newRecorder()
	second := &recorder{name: "2:", mu: first.mu, log: first.log, open: make(map[*recordedOp]bool)}
	first.name = "1:"
	l := coretest.NewLocks(t, core.NewMemoryStore(core.WithMemoryClock(clock)), core.WithClock(clock),
		core.WithObserver(first), core.WithObserver(nil), core.WithObserver(second))
	mustAcquire(t, l, "k")
	first.check(t,
		"1:start acquire k lock", "2:start acquire k lock in acquire",
		"2:end acquire k ok=true err=-", "1:end acquire k ok=true err=-",
		"1:start hold k lock", "2:start hold k lock in hold")
}
