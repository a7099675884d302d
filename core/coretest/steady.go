package coretest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/leasehold/leasehold/core"
)

// PeriodFigures is what a [Holder] counted in one renewal period.
type PeriodFigures struct {
	// Period is the period's number: period k is the k-th ttl/3 after
	// the holder started, its end included.
	Period int
	// Calls is what the counter given to [HoldSteadily] counted in the
	// period: statements, round trips or pipelines, acquisitions included.
	Calls int64
	// Acquired is how many locks the holder acquired in the period.
	Acquired int
}

// HoldSteadily starts an instance on store, as [HoldMany] does, and
// acquires n locks on it at a steady rate over the duration over of its
// clock (a group of 32 at a time, each group at its own instant), keys "<prefix>:<i>", as a busy service takes
// them: the renewals of the first locks run while the last are taken. It
// counts calls() at the end of every renewal period (a third of the ttl,
// counted from the instance's start), during the acquisitions and in every
// [Holder.Period] after them (see [Holder.Periods]), and checks that no
// lock is renewed more than a third of its ttl after its last confirmed
// acquisition or renewal was sent (see [Holder.Late]). It fails tb if an
// acquisition fails.
func HoldSteadily(tb testing.TB, store core.LockStore, prefix string, n int, over time.Duration, calls func() int64, opts ...core.Option) *Holder {
	tb.Helper()
	clock := core.NewManualClock(time.Unix(1_700_000_000, 0))
	w := &watch{LockStore: store, clock: clock, last: make(map[string]watched, n)}
	var s core.LockStore = w
	if br, ok := store.(core.BatchRenewer); ok {
		s = &batchWatch{watch: w, br: br}
	}
	h := &Holder{Clock: clock, Held: make([]*core.Lock, n), start: clock.Now(), calls: calls, watch: w}
	h.Locks = NewLocks(tb, s, append([]core.Option{core.WithClock(clock)}, opts...)...)
	h.counted = calls()
	// The locks are taken a few at a time, concurrently, each group at its
	// own instant of the clock: a store whose expiry runs on its own real
	// clock must not see the acquisitions take longer than a ttl.
	errs := make([]error, holderWorkers)
	for first := 0; first < n; first += holderWorkers {
		if first > 0 {
			h.advanceTo(h.start.Add(over * time.Duration(first) / time.Duration(n)))
		}
		group := min(holderWorkers, n-first)
		var wg sync.WaitGroup
		for w := range group {
			wg.Go(func() {
				i := first + w
				h.Held[i], errs[w] = h.Locks.Acquire(context.Background(), fmt.Sprintf("%s:%d", prefix, i))
			})
		}
		wg.Wait()
		for _, err := range errs[:group] {
			if err != nil {
				tb.Fatalf("HoldSteadily: %v", err)
			}
		}
		h.interval = h.Held[first].TTL() / 3
		h.acquired += group
		h.lastAcquired = len(h.periods) + 1
	}
	h.advanceTo(h.boundary(len(h.periods) + 1)) // the rest of the last period
	return h
}

// boundary is the end of period k.
func (h *Holder) boundary(k int) time.Time {
	return h.start.Add(time.Duration(k) * h.interval)
}

// advanceTo moves the clock to t, stopping at each period's end to count.
func (h *Holder) advanceTo(t time.Time) {
	for now := h.Clock.Now(); now.Before(t); now = h.Clock.Now() {
		end := h.boundary(len(h.periods) + 1)
		if end.After(t) {
			h.Clock.Advance(t.Sub(now))
			return
		}
		h.Clock.Advance(end.Sub(now))
		c := h.calls()
		h.periods = append(h.periods, PeriodFigures{Period: len(h.periods) + 1, Calls: c - h.counted, Acquired: h.acquired})
		h.counted, h.acquired = c, 0
	}
}

// Periods returns the figures of every period so far; empty for a holder
// made by [HoldMany].
func (h *Holder) Periods() []PeriodFigures { return h.periods }

// SteadyFrom returns the first period of the steady state: the second
// after the period of the last acquisition.
func (h *Holder) SteadyFrom() int { return h.lastAcquired + 2 }

// Late returns how many renewals reached the store more than a third of
// their ttl after the lock's last confirmed acquisition or renewal was
// sent; 0 for a holder made by [HoldMany].
func (h *Holder) Late() int {
	if h.watch == nil {
		return 0
	}
	h.watch.mu.Lock()
	defer h.watch.mu.Unlock()
	return h.watch.late
}

// Report logs the figures of every period, reports the most calls of a
// steady-state period as the metric "steady-max-<unit>", and fails b if a
// renewal was late or a lock was lost.
func (h *Holder) Report(b *testing.B, unit string) {
	b.Helper()
	var steadyMax int64 = -1
	for _, p := range h.periods {
		b.Logf("period %d: %d %s, %d acquisitions", p.Period, p.Calls, unit, p.Acquired)
		if p.Period >= h.SteadyFrom() {
			steadyMax = max(steadyMax, p.Calls)
		}
	}
	if steadyMax >= 0 {
		b.ReportMetric(float64(steadyMax), "steady-max-"+unit)
	}
	if n := h.Late(); n > 0 {
		b.Errorf("%d renewals later than a third of the ttl after the last confirmed send", n)
	}
	if n := h.Lost(); n > 0 {
		b.Errorf("%d locks lost", n)
	}
}

// watch is a store that notes, per lock, when its last confirmed
// acquisition or renewal was sent, on the holder's clock, and counts
// renewals that came later than a third of the ttl after it.
type watch struct {
	core.LockStore
	clock core.Clock

	mu   sync.Mutex
	last map[string]watched // by key
	late int
}

type watched struct {
	owner string
	at    time.Time
}

func (w *watch) Acquire(ctx context.Context, key, owner string, ttl time.Duration) (int64, bool, error) {
	at := w.clock.Now()
	token, ok, err := w.LockStore.Acquire(ctx, key, owner, ttl)
	if ok && err == nil {
		w.mu.Lock()
		w.last[key] = watched{owner, at}
		w.mu.Unlock()
	}
	return token, ok, err
}

func (w *watch) Renew(ctx context.Context, key, owner string, ttl time.Duration) (bool, error) {
	at := w.clock.Now()
	ok, err := w.LockStore.Renew(ctx, key, owner, ttl)
	w.renewed(at, core.Lease{Key: key, Owner: owner, TTL: ttl}, ok && err == nil)
	return ok, err
}

// renewed notes a renewal of l sent at at.
func (w *watch) renewed(at time.Time, l core.Lease, ok bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	prev, held := w.last[l.Key]
	if !held || prev.owner != l.Owner {
		return
	}
	if at.After(prev.at.Add(l.TTL / 3)) {
		w.late++
	}
	if ok {
		w.last[l.Key] = watched{l.Owner, at}
	}
}

type batchWatch struct {
	*watch
	br core.BatchRenewer
}

func (w *batchWatch) MaxBatch() int { return w.br.MaxBatch() }

func (w *batchWatch) RenewBatch(ctx context.Context, leases []core.Lease) ([]bool, error) {
	at := w.clock.Now()
	renewed, err := w.br.RenewBatch(ctx, leases)
	for i, l := range leases {
		w.renewed(at, l, err == nil && i < len(renewed) && renewed[i])
	}
	return renewed, err
}
