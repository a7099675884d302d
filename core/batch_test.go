package core_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leasehold/leasehold/core"
	"github.com/leasehold/leasehold/core/coretest"
)

// batchStore is a memory store with batch renewal of a chosen size that
// records every RenewBatch call, counts single Renew calls, and can fail
// or cut the answers of the batches on demand.
type batchStore struct {
	core.LockStore // the memory store
	mem            *core.MemoryStore
	clock          core.Clock // whose time the calls are recorded at
	max            int

	mu      sync.Mutex
	batches []batchCall
	renews  int
	err     error                     // when set, RenewBatch fails with it
	answers func([]bool) []bool       // when set, rewrites the answers
	gate    chan struct{}             // when set, RenewBatch waits on it
	inside  atomic.Int64              // calls in flight
	peak    atomic.Int64              // most calls in flight at once
	enter   func(ctx context.Context) // when set, runs at the start of each call
	// failGroup, when set, fails the leases it picks: they are not
	// renewed, are answered false, and the call returns a *BatchError
	// that carries errStoreDown for them.
	failGroup func(l core.Lease) bool
}

type batchCall struct {
	at      time.Time
	leases  []core.Lease
	renewed []bool
	err     error
}

func newBatchStore(mem *core.MemoryStore, clock core.Clock, max int) *batchStore {
	return &batchStore{LockStore: mem, mem: mem, clock: clock, max: max}
}

func (s *batchStore) MaxBatch() int { return s.max }

func (s *batchStore) Renew(ctx context.Context, key, owner string, ttl time.Duration) (bool, error) {
	s.mu.Lock()
	s.renews++
	s.mu.Unlock()
	return s.LockStore.Renew(ctx, key, owner, ttl)
}

func (s *batchStore) RenewBatch(ctx context.Context, leases []core.Lease) ([]bool, error) {
	n := s.inside.Add(1)
	defer s.inside.Add(-1)
	for p := s.peak.Load(); n > p && !s.peak.CompareAndSwap(p, n); p = s.peak.Load() {
	}
	s.mu.Lock()
	err, answers, gate, enter, failGroup := s.err, s.answers, s.gate, s.enter, s.failGroup
	at := s.clock.Now()
	s.mu.Unlock()
	if enter != nil {
		enter(ctx)
	}
	if gate != nil {
		<-gate
	}
	var renewed []bool
	switch {
	case err == nil && failGroup != nil:
		renewed, err = s.renewGroups(ctx, leases, failGroup)
	case err == nil:
		renewed, err = s.mem.RenewBatch(ctx, leases)
	}
	if err == nil && answers != nil {
		renewed = answers(renewed)
	}
	s.mu.Lock()
	s.batches = append(s.batches, batchCall{at: at, leases: slices.Clone(leases), renewed: renewed, err: err})
	s.mu.Unlock()
	return renewed, err
}

// renewGroups renews the leases failGroup does not pick, and fails the
// others with a *BatchError, answering them false.
func (s *batchStore) renewGroups(ctx context.Context, leases []core.Lease, failGroup func(core.Lease) bool) ([]bool, error) {
	renewed := make([]bool, len(leases))
	failed := map[int]error{}
	for i, l := range leases {
		if failGroup(l) {
			failed[i] = errStoreDown
			continue
		}
		ok, err := s.mem.Renew(ctx, l.Key, l.Owner, l.TTL)
		if err != nil {
			return nil, err
		}
		renewed[i] = ok
	}
	return renewed, core.NewBatchError(len(leases), failed)
}

func (s *batchStore) set(f func(s *batchStore)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f(s)
}

// calls returns the RenewBatch calls so far, and the number of Renew calls.
func (s *batchStore) calls() ([]batchCall, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.batches), s.renews
}

// sizes returns the number of leases of each call.
func sizes(calls []batchCall) []int {
	out := make([]int, len(calls))
	for i, c := range calls {
		out[i] = len(c.leases)
	}
	return out
}

// keys returns the keys of calls' leases, sorted.
func batchKeys(calls []batchCall) []string {
	var out []string
	for _, c := range calls {
		for _, l := range c.leases {
			out = append(out, l.Key)
		}
	}
	slices.Sort(out)
	return out
}

func TestBatchRenewalOneCallPerChunk(t *testing.T) {
	clock := core.NewManualClock(t0)
	store := newBatchStore(core.NewMemoryStore(core.WithMemoryClock(clock)), clock, 4)
	locks := coretest.NewLocks(t, store, core.WithClock(clock))
	var held []*core.Lock
	var want []string
	for i := range 10 {
		key := fmt.Sprintf("k%02d", i)
		held = append(held, mustAcquire(t, locks, key))
		want = append(want, key)
	}

	clock.Advance(core.DefaultTTL / 3)
	calls, renews := store.calls()
	if got := sizes(calls); renews != 0 || !slices.Equal(slices.Sorted(slices.Values(got)), []int{2, 4, 4}) {
		t.Fatalf("one firing of 10 due locks made batches of %v and %d single renewals; want chunks of at most MaxBatch 4 (4, 4, 2) and none", got, renews)
	}
	if got := batchKeys(calls); !slices.Equal(got, want) {
		t.Fatalf("the batches renewed %v; want each held lock once: %v", got, want)
	}
	for _, c := range calls {
		if !c.at.Equal(t0.Add(10*time.Second)) || c.err != nil || slices.Contains(c.renewed, false) {
			t.Fatalf("batch %+v; want every lease renewed at 10s", c)
		}
		for _, l := range c.leases {
			if l.TTL != core.DefaultTTL {
				t.Fatalf("lease %+v; want the lock's ttl", l)
			}
		}
	}
	// Each lock's owner is the one in its lease.
	owners := map[string]string{}
	for _, c := range calls {
		for _, l := range c.leases {
			owners[l.Key] = l.Owner
		}
	}
	for _, lk := range held {
		if owners[lk.Key()] != lk.Owner() {
			t.Fatalf("lease of %s has owner %q; want the lock's %q", lk.Key(), owners[lk.Key()], lk.Owner())
		}
	}

	// Five minutes on: three calls every 10s, all held.
	clock.Advance(5*time.Minute - 10*time.Second)
	calls, renews = store.calls()
	if len(calls) != 3*30 || renews != 0 {
		t.Fatalf("%d batches and %d single renewals in 5 minutes; want 90 and 0", len(calls), renews)
	}
	for _, lk := range held {
		if !lk.Held() || holder(t, store.mem, lk.Key()) != lk.Owner() {
			t.Fatalf("%s not held after 5 minutes of batch renewals", lk.Key())
		}
	}
}

// TestBatchMixedAnswers: of one batch, a lease still held is renewed, and
// each lease the store answers false (released behind the holder's back,
// taken by another owner, expired on the store's clock) is lost at once.
func TestBatchMixedAnswers(t *testing.T) {
	h := newPausedHolder(t) // for its clocks, logs and events
	store := newBatchStore(h.store, h.procClock, 10)
	var evs events
	locks := coretest.NewLocks(t, store, core.WithClock(h.procClock), core.WithEventHandler(evs.handle))

	expired := mustAcquire(t, locks, "expired")
	h.storeClock.Advance(20 * time.Second) // the store runs ahead of the process
	held := mustAcquire(t, locks, "held")
	released := mustAcquire(t, locks, "released")
	foreign := mustAcquire(t, locks, "foreign")
	h.storeClock.Advance(11 * time.Second) // "expired" has expired in the store
	if ok, err := h.store.Release(bg, "released", released.Owner()); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if ok, err := h.store.Release(bg, "foreign", foreign.Owner()); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if _, ok, err := h.store.Acquire(bg, "foreign", "intruder", time.Hour); !ok || err != nil {
		t.Fatal(ok, err)
	}

	h.procClock.Advance(core.DefaultTTL / 3)
	calls, renews := store.calls()
	if len(calls) != 1 || renews != 0 {
		t.Fatalf("%d batches, %d single renewals; want one batch", len(calls), renews)
	}
	answers := map[string]bool{}
	for i, l := range calls[0].leases {
		answers[l.Key] = calls[0].renewed[i]
	}
	if want := map[string]bool{"held": true, "expired": false, "released": false, "foreign": false}; fmt.Sprint(answers) != fmt.Sprint(want) {
		t.Fatalf("the store answered %v; want %v", answers, want)
	}
	if !held.Held() || isDone(held.Done()) {
		t.Fatal("the lock the store renewed was lost")
	}
	for _, lk := range []*core.Lock{expired, released, foreign} {
		var lost *core.LockLostError
		if lk.Held() || !errors.As(context.Cause(lk.Context()), &lost) || lost.Reason != core.LostRefused || lost.Key != lk.Key() {
			t.Fatalf("%s: held %v, cause %v; want lost, refused by the store", lk.Key(), lk.Held(), context.Cause(lk.Context()))
		}
	}
	if n := len(evs.list()); n != 3 {
		t.Fatalf("%d lock-lost events; want 3", n)
	}
	if holder(t, h.store, "foreign") != "intruder" {
		t.Fatal("the intruder's lock was touched")
	}
	// The next firing renews the one lock left.
	h.procClock.Advance(core.DefaultTTL / 3)
	if calls, _ := store.calls(); len(calls) != 2 || !slices.Equal(batchKeys(calls[1:]), []string{"held"}) {
		t.Fatalf("second firing renewed %v; want the held lock only", batchKeys(calls[1:]))
	}
}

// TestBatchErrorRetriesUntilOwnDeadline: a failed batch is retried, as a
// batch, every ttl/10 of each lock, and each lock is lost at its own
// deadline (ttl minus the safety margin after the last confirmed send).
func TestBatchErrorRetriesUntilOwnDeadline(t *testing.T) {
	clock := core.NewManualClock(t0)
	store := newBatchStore(core.NewMemoryStore(core.WithMemoryClock(clock)), clock, 10)
	locks := coretest.NewLocks(t, store, core.WithClock(clock))
	long := mustAcquire(t, locks, "long", core.WithTTL(60*time.Second)) // due at 20s
	clock.Advance(10 * time.Second)
	short := mustAcquire(t, locks, "short") // 30s: due at 20s

	clock.Advance(10 * time.Second) // both renewed at 20s, in one batch
	if calls, _ := store.calls(); len(calls) != 1 || len(calls[0].leases) != 2 {
		t.Fatalf("batches %v; want both locks in one at 20s", sizes(calls))
	}
	store.set(func(s *batchStore) { s.err = errStoreDown })
	deadlines := map[*core.Lock]time.Time{
		short: t0.Add(20*time.Second + core.DefaultTTL - core.SafetyMargin(core.DefaultTTL)),
		long:  t0.Add(20*time.Second + 60*time.Second - core.SafetyMargin(60*time.Second)),
	}
	lostAt := map[*core.Lock]time.Time{}
	for clock.Now().Before(t0.Add(90 * time.Second)) {
		clock.Advance(100 * time.Millisecond)
		for lk := range deadlines {
			if _, seen := lostAt[lk]; !seen && isDone(lk.Done()) {
				lostAt[lk] = clock.Now()
			}
		}
	}
	for lk, deadline := range deadlines {
		if got := lostAt[lk]; !got.Equal(deadline) {
			t.Errorf("%s lost at %v; want its own deadline %v", lk.Key(), got.Sub(t0), deadline.Sub(t0))
		}
		var lost *core.LockLostError
		if !errors.As(context.Cause(lk.Context()), &lost) || lost.Reason != core.LostDeadline || !errors.Is(lost, errStoreDown) {
			t.Errorf("%s: cause %v; want lost past its deadline, with the batch's error", lk.Key(), context.Cause(lk.Context()))
		}
	}
	calls, renews := store.calls()
	if renews != 0 {
		t.Fatalf("%d single renewals; want batches only", renews)
	}
	// Every failed call retried within ttl/10 of the previous, and each
	// lock was in a call within ttl/10 of its deadline.
	last := map[string]time.Time{}
	for _, c := range calls[1:] {
		if c.err == nil {
			t.Fatalf("a batch succeeded while the store was down: %+v", c)
		}
		for _, l := range c.leases {
			if prev, ok := last[l.Key]; ok && c.at.Sub(prev) > l.TTL/10 {
				t.Fatalf("%s retried %v after its previous try; want every ttl/10", l.Key, c.at.Sub(prev))
			}
			last[l.Key] = c.at
		}
	}
	for lk, deadline := range deadlines {
		if gap := deadline.Sub(last[lk.Key()]); gap < 0 || gap > lk.TTL()/10 {
			t.Fatalf("%s last tried %v before its deadline; want within ttl/10", lk.Key(), gap)
		}
	}
}

// TestBatchRecoveryMovesDeadline: a batch that succeeds after failures
// moves each lock's deadline to ttl, less the margin, after it was sent.
func TestBatchRecoveryMovesDeadline(t *testing.T) {
	clock := core.NewManualClock(t0)
	store := newBatchStore(core.NewMemoryStore(core.WithMemoryClock(clock)), clock, 10)
	locks := coretest.NewLocks(t, store, core.WithClock(clock))
	lk := mustAcquire(t, locks, "k")
	store.set(func(s *batchStore) { s.err = errStoreDown })
	clock.Advance(15 * time.Second) // fails at 10s and 13s
	store.set(func(s *batchStore) { s.err = nil })
	clock.Advance(time.Second) // succeeds at 16s
	store.set(func(s *batchStore) { s.err = errStoreDown })
	deadline := t0.Add(16*time.Second + core.DefaultTTL - core.SafetyMargin(core.DefaultTTL))
	clock.Advance(deadline.Sub(clock.Now()) - time.Millisecond)
	if !lk.Held() {
		t.Fatal("lost before the deadline counted from the recovered batch")
	}
	clock.Advance(time.Millisecond)
	if lk.Held() || !isDone(lk.Done()) {
		t.Fatal("held past the deadline counted from the last confirmed batch")
	}
}

// TestBatchWrongAnswerCount: a store that answers a batch with the wrong
// number of answers has answered nothing: the call counts as failed.
func TestBatchWrongAnswerCount(t *testing.T) {
	clock := core.NewManualClock(t0)
	store := newBatchStore(core.NewMemoryStore(core.WithMemoryClock(clock)), clock, 10)
	store.answers = func(renewed []bool) []bool { return renewed[:len(renewed)-1] }
	locks := coretest.NewLocks(t, store, core.WithClock(clock))
	a, b := mustAcquire(t, locks, "a"), mustAcquire(t, locks, "b")
	clock.Advance(core.DefaultTTL)
	for _, lk := range []*core.Lock{a, b} {
		var lost *core.LockLostError
		if !errors.As(context.Cause(lk.Context()), &lost) || lost.Reason != core.LostDeadline || !errors.Is(lost, core.ErrBrokenStore) {
			t.Fatalf("%s: cause %v; want lost at the deadline with ErrBrokenStore", lk.Key(), context.Cause(lk.Context()))
		}
	}
}

// TestBatchRenewsOnTheGrid: the locks of one ttl renew together, on a
// grid of their renewal interval counted from the instance's start: each
// at the last grid point before its renewal falls due (early, never late),
// and from then on at every grid point. Locks of another ttl keep their
// own grid.
func TestBatchRenewsOnTheGrid(t *testing.T) {
	clock := core.NewManualClock(t0)
	store := newBatchStore(core.NewMemoryStore(core.WithMemoryClock(clock)), clock, 10)
	locks := coretest.NewLocks(t, store, core.WithClock(clock))
	take := func(at time.Duration, key string, opts ...core.AcquireOption) {
		clock.Advance(at - clock.Now().Sub(t0))
		mustAcquire(t, locks, key, opts...)
	}
	// ttl 30s (grid every 10s): due at 10s, 11s, 12.5s, 12.501s and
	// 19.999s, all renewed at 10s; due at 20.5s, renewed at 20s.
	for i, at := range []time.Duration{0, time.Second, 2500 * time.Millisecond, 2501 * time.Millisecond} {
		take(at, fmt.Sprint("k", i))
	}
	take(3*time.Second, "long", core.WithTTL(time.Minute)) // grid every 20s: due at 23s, renewed at 20s
	take(9999*time.Millisecond, "k4")
	take(10500*time.Millisecond, "k5")
	clock.Advance(59*time.Second - clock.Now().Sub(t0))
	calls, _ := store.calls()
	var got []string
	for _, c := range calls {
		got = append(got, fmt.Sprintf("%v:%d", c.at.Sub(t0), len(c.leases)))
	}
	want := []string{"10s:5", "20s:7", "30s:6", "40s:7", "50s:6"}
	if !slices.Equal(got, want) {
		t.Fatalf("batches (time:leases) %v; want %v", got, want)
	}
}

// TestBatchChunksInFlightAreBounded: a firing sends its chunks
// concurrently, at most 32 at once.
func TestBatchChunksInFlightAreBounded(t *testing.T) {
	clock := core.NewManualClock(t0)
	store := newBatchStore(core.NewMemoryStore(core.WithMemoryClock(clock)), clock, 0) // MaxBatch 0 reads as 1
	gate := make(chan struct{})
	store.gate = gate
	locks := coretest.NewLocks(t, store, core.WithClock(clock))
	const n = 200
	for i := range n {
		mustAcquire(t, locks, fmt.Sprint("k", i))
	}
	done := make(chan struct{})
	go func() { defer close(done); clock.Advance(core.DefaultTTL / 3) }()
	for range n {
		gate <- struct{}{}
	}
	<-done
	calls, _ := store.calls()
	if peak := store.peak.Load(); len(calls) != n || peak < 2 || peak > 32 {
		t.Fatalf("%d calls, at most %d at once; want %d calls of one lease, between 2 and 32 at once", len(calls), peak, n)
	}
}

// TestBatchCallHasADeadline: a batch call's context ends once the last of
// its locks' deadlines has passed, so a hung call does not block renewals
// for ever.
func TestBatchCallHasADeadline(t *testing.T) {
	clock := core.NewManualClock(t0)
	store := newBatchStore(core.NewMemoryStore(core.WithMemoryClock(clock)), clock, 10)
	var deadlines []time.Duration
	store.enter = func(ctx context.Context) {
		d, ok := ctx.Deadline()
		if !ok {
			d = time.Time{}
		}
		deadlines = append(deadlines, time.Until(d).Round(time.Second))
	}
	locks := coretest.NewLocks(t, store, core.WithClock(clock))
	mustAcquire(t, locks, "b", core.WithTTL(time.Minute)) // due at 20s
	clock.Advance(10 * time.Second)
	mustAcquire(t, locks, "a") // due at 20s
	clock.Advance(10 * time.Second)
	// Sent at 20s; a's deadline is 30s - 1.5s after its acquisition at
	// 10s, b's 60s - 3s after its own at 0s: 37s after the send, the later
	// of the two.
	if want := []time.Duration{37 * time.Second}; !slices.Equal(deadlines, want) {
		t.Fatalf("batch contexts end in %v; want %v", deadlines, want)
	}
}

func TestMemoryStoreRenewBatch(t *testing.T) {
	clock := core.NewManualClock(t0)
	s := core.NewMemoryStore(core.WithMemoryClock(clock))
	memAcquire(t, s, "short", "a", time.Second)
	memAcquire(t, s, "held", "a", time.Minute)
	memAcquire(t, s, "other", "b", time.Minute)
	memAcquire(t, s, "released", "a", time.Minute)
	memRelease(t, s, "released", "a")
	clock.Advance(time.Second) // "short" expires
	leases := []core.Lease{
		{Key: "held", Owner: "a", TTL: 10 * time.Second},
		{Key: "short", Owner: "a", TTL: time.Minute},
		{Key: "other", Owner: "a", TTL: time.Minute},
		{Key: "released", Owner: "a", TTL: time.Minute},
		{Key: "never", Owner: "a", TTL: time.Minute},
		{Key: "other", Owner: "b", TTL: 2 * time.Minute},
	}
	renewed, err := s.RenewBatch(bg, leases)
	if want := []bool{true, false, false, false, false, true}; err != nil || !slices.Equal(renewed, want) {
		t.Fatalf("RenewBatch = %v, %v; want %v", renewed, err, want)
	}
	for _, info := range live(t, s) {
		want := map[string]time.Duration{"held": 10 * time.Second, "other": 2 * time.Minute}[info.Key]
		if info.ExpiresIn != want {
			t.Fatalf("%s expires in %v; want the batch's ttl %v", info.Key, info.ExpiresIn, want)
		}
	}
	if n := len(live(t, s)); n != 2 {
		t.Fatalf("%d live locks; a refused lease created or revived one", n)
	}

	if renewed, err := s.RenewBatch(bg, nil); err != nil || len(renewed) != 0 {
		t.Fatalf("empty batch: %v, %v", renewed, err)
	}
	if _, err := s.RenewBatch(bg, make([]core.Lease, s.MaxBatch()+1)); !errors.Is(err, core.ErrInvalidArgument) {
		t.Fatalf("batch over MaxBatch: %v; want ErrInvalidArgument", err)
	}
	ctx, cancel := context.WithCancel(bg)
	cancel()
	if _, err := s.RenewBatch(ctx, leases[:1]); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled context: %v", err)
	}
}

// TestBatchObservedPerLease: an Observer sees each lease of a batch as a
// renewal of its own, ended with that lease's answer.
func TestBatchObservedPerLease(t *testing.T) {
	clock := core.NewManualClock(t0)
	mem := core.NewMemoryStore(core.WithMemoryClock(clock))
	rec := newRecorder()
	locks := coretest.NewLocks(t, mem, core.WithClock(clock), core.WithObserver(rec))
	mustAcquire(t, locks, "a")
	b := mustAcquire(t, locks, "b")
	if ok, err := mem.Release(bg, "b", b.Owner()); !ok || err != nil {
		t.Fatal(ok, err)
	}
	rec.take()
	clock.Advance(core.DefaultTTL / 3)
	rec.check(t,
		"start renew a lock",
		"start renew b lock",
		"end renew a ok=true err=-",
		"end renew b ok=false err=-",
		"end hold b ok=false err=lost(refused by the store)",
	)
}

// TestSingleRenewalsKeepTheirOwnTime: without batch renewal there is
// nothing to gain by renewing early, so each lock renews a third of its
// ttl after its last renewal was sent, off any grid.
func TestSingleRenewalsKeepTheirOwnTime(t *testing.T) {
	clock := core.NewManualClock(t0)
	spy := newSpy(core.NewMemoryStore(core.WithMemoryClock(clock)), clock)
	locks := coretest.NewLocks(t, spy, core.WithClock(clock))
	mustAcquire(t, locks, "a")
	clock.Advance(2500 * time.Millisecond)
	mustAcquire(t, locks, "b")
	clock.Advance(30 * time.Second)
	for key, want := range map[string][]time.Duration{
		"a": {10 * time.Second, 20 * time.Second, 30 * time.Second},
		"b": {12500 * time.Millisecond, 22500 * time.Millisecond, 32500 * time.Millisecond},
	} {
		if got := since(spy.timesKey("renew", key)); !slices.Equal(got, want) {
			t.Errorf("renewals of %s at %v; want %v", key, got, want)
		}
	}
}

// TestBatchPartialAnswer: a store that answers one group of a batch and
// fails the other (a dead node of a cluster) costs only the failed
// group's locks, each at its own deadline, and only after retrying them
// alone; the answered locks stay held. The failed leases come back
// answered false, which the keeper must not read as refusals.
func TestBatchPartialAnswer(t *testing.T) {
	clock := core.NewManualClock(t0)
	store := newBatchStore(core.NewMemoryStore(core.WithMemoryClock(clock)), clock, 100)
	locks := coretest.NewLocks(t, store, core.WithClock(clock))
	var good, dead []*core.Lock
	for i := range 10 {
		good = append(good, mustAcquire(t, locks, fmt.Sprintf("good/%d", i)))
		dead = append(dead, mustAcquire(t, locks, fmt.Sprintf("dead/%d", i)))
	}
	store.set(func(s *batchStore) {
		s.failGroup = func(l core.Lease) bool { return strings.HasPrefix(l.Key, "dead/") }
	})
	deadline := t0.Add(core.DefaultTTL - core.SafetyMargin(core.DefaultTTL))
	clock.Advance(deadline.Sub(t0) - time.Millisecond)
	for _, lk := range dead {
		if !lk.Held() {
			t.Fatalf("%s lost before its deadline: %v", lk.Key(), context.Cause(lk.Context()))
		}
	}
	clock.Advance(time.Millisecond)
	for _, lk := range dead {
		var lost *core.LockLostError
		if !errors.As(context.Cause(lk.Context()), &lost) || lost.Reason != core.LostDeadline || !errors.Is(lost, errStoreDown) {
			t.Fatalf("%s: cause %v; want lost at its deadline with its group's error", lk.Key(), context.Cause(lk.Context()))
		}
	}
	clock.Advance(3 * core.DefaultTTL)
	for _, lk := range good {
		if !lk.Held() {
			t.Fatalf("%s, answered in every batch, lost: %v", lk.Key(), context.Cause(lk.Context()))
		}
	}
	// After the first call, the retries carry the failed leases only:
	// the answered ones wait for their next renewal.
	calls, _ := store.calls()
	retries := 0
	for _, c := range calls {
		var be *core.BatchError
		if !errors.As(c.err, &be) {
			continue
		}
		if len(c.leases) < 20 {
			retries++
			for _, l := range c.leases {
				if !strings.HasPrefix(l.Key, "dead/") {
					t.Fatalf("a retry at %v carried %s, which was answered", c.at.Sub(t0), l.Key)
				}
			}
		}
	}
	if retries == 0 {
		t.Fatal("the failed group was never retried alone")
	}
}

// TestBatchErrorWrongLength: a *BatchError without one entry per lease is
// a broken answer: every lease of the call counts as failed.
func TestBatchErrorWrongLength(t *testing.T) {
	clock := core.NewManualClock(t0)
	store := cutErrs{newBatchStore(core.NewMemoryStore(core.WithMemoryClock(clock)), clock, 10)}
	locks := coretest.NewLocks(t, store, core.WithClock(clock))
	a, b := mustAcquire(t, locks, "a"), mustAcquire(t, locks, "b")
	clock.Advance(core.DefaultTTL)
	for _, lk := range []*core.Lock{a, b} {
		var lost *core.LockLostError
		if !errors.As(context.Cause(lk.Context()), &lost) || lost.Reason != core.LostDeadline || !errors.Is(lost, core.ErrBrokenStore) {
			t.Fatalf("%s: cause %v; want lost at the deadline with ErrBrokenStore", lk.Key(), context.Cause(lk.Context()))
		}
	}
}

// cutErrs renews every lease and answers true, with a *BatchError that
// holds one entry too few.
type cutErrs struct{ *batchStore }

func (s cutErrs) RenewBatch(ctx context.Context, leases []core.Lease) ([]bool, error) {
	renewed, err := s.mem.RenewBatch(ctx, leases)
	if err != nil {
		return nil, err
	}
	return renewed, &core.BatchError{Errs: make([]error, len(leases)-1)}
}

func TestBatchErrorMessage(t *testing.T) {
	if err := core.NewBatchError(3, nil); err != nil {
		t.Fatalf("NewBatchError with no failure = %v; want nil", err)
	}
	err := core.NewBatchError(3, map[int]error{1: errStoreDown, 2: errStoreDown})
	var be *core.BatchError
	if !errors.As(err, &be) || be.Errs[0] != nil || be.Errs[1] != errStoreDown || !errors.Is(err, errStoreDown) {
		t.Fatalf("NewBatchError = %#v", err)
	}
	if got := err.Error(); !strings.Contains(got, "2 of 3") || !strings.Contains(got, errStoreDown.Error()) {
		t.Fatalf("Error() = %q", got)
	}
}
