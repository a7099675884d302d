package core_test

import (
	"context"
	"log/slog"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/leasehold/leasehold/core"
)

// t0 is where every manual clock of the tests starts.
var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

var discard = slog.New(slog.DiscardHandler)

func mustAcquire(t testing.TB, l *core.Locks, key string, opts ...core.AcquireOption) *core.Lock {
	t.Helper()
	lk, err := l.Acquire(context.Background(), key, opts...)
	if err != nil {
		t.Fatalf("Acquire(%q): %v", key, err)
	}
	return lk
}

// events collects what an event handler receives.
type events struct {
	mu  sync.Mutex
	all []core.Event
}

func (e *events) handle(ev core.Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.all = append(e.all, ev)
}

func (e *events) list() []core.Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]core.Event(nil), e.all...)
}

// storeCall is one call a spyStore saw, with the time of its clock.
type storeCall struct {
	op, key, owner string
	at             time.Time
	ok             bool // the store's answer
}

// spyStore wraps a store, records its calls and can break it on demand.
type spyStore struct {
	inner core.LockStore
	clock core.Clock // whose time the calls are recorded at

	mu    sync.Mutex
	calls []storeCall
	// acquireErr, renewErr, when set, are what Acquire and Renew return
	// instead of asking inner.
	acquireErr, renewErr error
	// tokenFn, when set, replaces the token of a successful acquisition.
	tokenFn func(key string, token int64) int64
	// beforeAcquire, beforeRenew run at the start of those calls.
	beforeAcquire func(ctx context.Context, key string)
	beforeRenew   func(ctx context.Context, key string)
}

func newSpy(inner core.LockStore, clock core.Clock) *spyStore {
	return &spyStore{inner: inner, clock: clock}
}

// record notes a call, at the time it starts; answer notes its answer.
func (s *spyStore) record(op, key, owner string) (answer func(ok bool)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := len(s.calls)
	s.calls = append(s.calls, storeCall{op: op, key: key, owner: owner, at: s.clock.Now()})
	return func(ok bool) {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.calls[i].ok = ok
	}
}

func (s *spyStore) Acquire(ctx context.Context, key, owner string, ttl time.Duration) (int64, bool, error) {
	answer := s.record("acquire", key, owner)
	s.mu.Lock()
	before, tokenFn, acquireErr := s.beforeAcquire, s.tokenFn, s.acquireErr
	s.mu.Unlock()
	if before != nil {
		before(ctx, key)
	}
	if acquireErr != nil {
		answer(false)
		return 0, false, acquireErr
	}
	token, ok, err := s.inner.Acquire(ctx, key, owner, ttl)
	if ok && tokenFn != nil {
		token = tokenFn(key, token)
	}
	answer(ok)
	return token, ok, err
}

func (s *spyStore) Renew(ctx context.Context, key, owner string, ttl time.Duration) (bool, error) {
	s.record("renew", key, owner)
	s.mu.Lock()
	before, renewErr := s.beforeRenew, s.renewErr
	s.mu.Unlock()
	if before != nil {
		before(ctx, key)
	}
	if renewErr != nil {
		return false, renewErr
	}
	return s.inner.Renew(ctx, key, owner, ttl)
}

func (s *spyStore) Release(ctx context.Context, key, owner string) (bool, error) {
	ok, err := s.inner.Release(ctx, key, owner)
	s.record("release", key, owner)(ok)
	return ok, err
}

func (s *spyStore) setRenewErr(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.renewErr = err
}

// times returns the clock times of the calls of op.
func (s *spyStore) times(op string) []time.Time { return s.timesKey(op, "") }

// timesKey returns the clock times of the calls of op on key ("": any key).
func (s *spyStore) timesKey(op, key string) []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []time.Time
	for _, c := range s.calls {
		if c.op == op && (key == "" || c.key == key) {
			out = append(out, c.at)
		}
	}
	return out
}

func (s *spyStore) count(op string) int { return len(s.times(op)) }

// granted reports whether the store granted an acquisition.
func (s *spyStore) granted() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.calls {
		if c.op == "acquire" && c.ok {
			return true
		}
	}
	return false
}

// countKey counts the calls of op on key.
func (s *spyStore) countKey(op, key string) int { return len(s.timesKey(op, key)) }

// since returns ts as offsets from t0.
func since(ts []time.Time) []time.Duration {
	out := make([]time.Duration, len(ts))
	for i, t := range ts {
		out[i] = t.Sub(t0)
	}
	return out
}

// seconds returns the durations of secs, in seconds.
func seconds(secs ...int) []time.Duration {
	out := make([]time.Duration, len(secs))
	for i, s := range secs {
		out[i] = time.Duration(s) * time.Second
	}
	return out
}

// live returns the live locks of a memory store under key prefix "".
func live(t testing.TB, s *core.MemoryStore) []core.LockInfo {
	t.Helper()
	infos, err := s.List(context.Background(), "")
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	return infos
}

// holder returns the owner of key in s, or "" if no live lock holds it.
func holder(t testing.TB, s *core.MemoryStore, key string) string {
	t.Helper()
	for _, info := range live(t, s) {
		if info.Key == key {
			return info.Owner
		}
	}
	return ""
}

// eventually polls cond until it holds, failing the test after 10s.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func isDone(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// noLeak fails the test if the goroutine count does not come back to
// baseline, and shows the goroutines that stayed.
func noLeak(t testing.TB, baseline int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > baseline {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			buf = buf[:runtime.Stack(buf, true)]
			t.Fatalf("%d goroutines, baseline %d:\n%s", runtime.NumGoroutine(), baseline, buf)
		}
		time.Sleep(time.Millisecond)
	}
}

// acquireResult is what a background Acquire returns.
type acquireResult struct {
	lk  *core.Lock
	err error
}

func acquireAsync(l *core.Locks, ctx context.Context, key string, opts ...core.AcquireOption) <-chan acquireResult {
	ch := make(chan acquireResult, 1)
	go func() {
		lk, err := l.Acquire(ctx, key, opts...)
		ch <- acquireResult{lk, err}
	}()
	return ch
}

// drive advances clock, the clock of a waiting Acquire and of nothing else,
// by step at a time, each time once the waiter sleeps on it (one pending
// timer), until the Acquire returns or limit has passed. It returns the
// result, if any, and how far the clock moved. granted, if not nil, reports
// whether the store granted the waiter the key: its lock's renewal timer is
// then the pending one, and the clock stays put.
func drive(t testing.TB, clock *core.ManualClock, step, limit time.Duration, res <-chan acquireResult, granted func() bool) (*acquireResult, time.Duration) {
	t.Helper()
	var moved time.Duration
	for {
		if granted != nil && granted() {
			select {
			case r := <-res:
				return &r, moved
			case <-time.After(10 * time.Second):
				t.Fatal("granted Acquire does not return")
			}
		}
		stuck := time.Now().Add(10 * time.Second)
		for clock.Pending() != 1 {
			select {
			case r := <-res:
				return &r, moved
			default:
			}
			if time.Now().After(stuck) {
				t.Fatalf("waiter neither sleeps nor returns (pending timers: %d)", clock.Pending())
			}
			runtime.Gosched()
		}
		select {
		case r := <-res:
			return &r, moved
		default:
		}
		if moved >= limit {
			return nil, moved
		}
		clock.Advance(step)
		moved += step
	}
}
