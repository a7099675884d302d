package core_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/leasehold/leasehold/core"
	"github.com/leasehold/leasehold/core/coretest"
)

// lateClock is a ManualClock whose timers fire late, as timers of a
// process under CPU load do.
type lateClock struct {
	*core.ManualClock
	late time.Duration
}

func (c lateClock) AfterFunc(d time.Duration, f func()) core.Timer {
	return c.ManualClock.AfterFunc(d+c.late, f)
}

// TestHolderGivesUpBeforeTheStore: with renewals failing and every timer of
// the holder firing late, the lock's context is cancelled, with LostDeadline,
// before the store (on the same clock) expires the lock, at every instant.
func TestHolderGivesUpBeforeTheStore(t *testing.T) {
	// Timers late by 200ms: more than the 170ms measured on a loaded host
	// (see docs/production.md), less than the margin's 250ms floor.
	const late = 200 * time.Millisecond
	for _, ttl := range []time.Duration{750 * time.Millisecond, 3 * time.Second, core.DefaultTTL} {
		t.Run(fmt.Sprintf("ttl %v, timers %v late", ttl, late), func(t *testing.T) {
			clock := core.NewManualClock(t0)
			store := core.NewMemoryStore(core.WithMemoryClock(clock))
			spy := newSpy(store, clock)
			spy.setRenewErr(errStoreDown)
			locks := coretest.NewLocks(t, spy, core.WithClock(lateClock{clock, late}))
			lk := mustAcquire(t, locks, "k", core.WithTTL(ttl))

			step := max(ttl/3000, 100*time.Microsecond)
			for clock.Now().Before(t0.Add(2 * ttl)) {
				clock.Advance(step)
				if holder(t, store, "k") == "" {
					break
				}
			}
			if holder(t, store, "k") != "" {
				t.Fatalf("the store never expired the lock")
			}
			if !isDone(lk.Done()) || lk.Held() {
				t.Fatalf("at %v the store has expired the lock (ttl %v), and its holder still believes it holds it", clock.Now().Sub(t0), ttl)
			}
			var lost *core.LockLostError
			if !errors.As(context.Cause(lk.Context()), &lost) || lost.Reason != core.LostDeadline {
				t.Fatalf("cause %v, want a LockLostError with LostDeadline", context.Cause(lk.Context()))
			}
		})
	}
}

func TestSafetyMargin(t *testing.T) {
	for _, c := range []struct{ ttl, want time.Duration }{
		{time.Millisecond, time.Millisecond / 3},
		{30 * time.Millisecond, 10 * time.Millisecond},
		{300 * time.Millisecond, 100 * time.Millisecond},
		{time.Second, 250 * time.Millisecond},
		{3 * time.Second, 250 * time.Millisecond},
		{6 * time.Second, 300 * time.Millisecond},
		{30 * time.Second, 1500 * time.Millisecond},
		{28 * 24 * time.Hour, 28 * 24 * time.Hour / 20},
	} {
		if got := core.SafetyMargin(c.ttl); got != c.want {
			t.Errorf("SafetyMargin(%v) = %v, want %v", c.ttl, got, c.want)
		}
	}
}
