package coretest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/leasehold/leasehold/core"
)

// Holder is a [core.Locks] instance, on a [core.ManualClock] of its own,
// that holds many locks: what benchmarks of renewal at scale measure.
type Holder struct {
	Locks *core.Locks
	Clock *core.ManualClock
	Held  []*core.Lock

	// Set by HoldSteadily only.
	start        time.Time
	interval     time.Duration // the locks' renewal period, ttl/3
	calls        func() int64
	counted      int64 // calls() at the end of the last period
	acquired     int   // acquisitions in the current period
	lastAcquired int   // the period of the last acquisition
	periods      []PeriodFigures
	watch        *watch
}

// holderWorkers is how many acquisitions HoldMany runs at once.
const holderWorkers = 32

// HoldMany starts an instance on store, as [NewLocks] does, on a manual
// clock of its own (opts come after it), and acquires n locks on it, keys
// "<prefix>:<i>", a few at a time. It fails tb if an acquisition fails.
func HoldMany(tb testing.TB, store core.LockStore, prefix string, n int, opts ...core.Option) *Holder {
	tb.Helper()
	h := &Holder{Clock: core.NewManualClock(time.Unix(1_700_000_000, 0)), Held: make([]*core.Lock, n)}
	h.Locks = NewLocks(tb, store, append([]core.Option{core.WithClock(h.Clock)}, opts...)...)
	errs := make([]error, holderWorkers)
	var wg sync.WaitGroup
	for w := range holderWorkers {
		wg.Go(func() {
			for i := w; i < n && errs[w] == nil; i += holderWorkers {
				h.Held[i], errs[w] = h.Locks.Acquire(context.Background(), fmt.Sprintf("%s:%d", prefix, i))
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			tb.Fatalf("HoldMany: %v", err)
		}
	}
	return h
}

// Period moves the holder's clock by one renewal period, a third of the
// ttl of its locks, and returns once every renewal it triggered has its
// answer.
func (h *Holder) Period() {
	if h.calls != nil {
		h.advanceTo(h.Clock.Now().Add(h.interval))
		return
	}
	if len(h.Held) > 0 {
		h.Clock.Advance(h.Held[0].TTL() / 3)
	}
}

// Lost returns how many of the holder's locks it no longer holds.
func (h *Holder) Lost() int {
	n := 0
	for _, lk := range h.Held {
		if !lk.Held() {
			n++
		}
	}
	return n
}

// LeaseByLease returns store as a plain [core.LockStore], hiding its
// optional capabilities: a [core.Locks] on it renews each lease with its
// own Renew call even when store implements [core.BatchRenewer], as
// leasehold did before batch renewal. Benchmarks compare the two with it.
func LeaseByLease(store core.LockStore) core.LockStore { return leaseByLease{store} }

type leaseByLease struct{ core.LockStore }
