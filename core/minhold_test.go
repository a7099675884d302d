package core_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/leasehold/leasehold/core"
	"github.com/leasehold/leasehold/core/coretest"
)

// handBackSetup is a holder on a clock of its own and a store on another,
// both at t0, and a rival instance on the store's clock.
type handBackSetup struct {
	clock, storeClock *core.ManualClock
	store             *core.MemoryStore
	spy               *spyStore
	holder, rival     *core.Locks
}

func newHandBackSetup(t *testing.T) *handBackSetup {
	s := &handBackSetup{clock: core.NewManualClock(t0), storeClock: core.NewManualClock(t0)}
	s.store = core.NewMemoryStore(core.WithMemoryClock(s.storeClock))
	s.spy = newSpy(s.store, s.clock)
	s.holder = coretest.NewLocks(t, s.spy, core.WithClock(s.clock), core.WithDefaultTTL(time.Minute))
	s.rival = coretest.NewLocks(t, s.store, core.WithClock(s.storeClock), core.WithDefaultTTL(time.Minute))
	return s
}

// advance moves both clocks by d.
func (s *handBackSetup) advance(d time.Duration) {
	s.storeClock.Advance(d)
	s.clock.Advance(d)
}

// rivalTakes reports whether the rival can take key now.
func (s *handBackSetup) rivalTakes(t *testing.T, key string) bool {
	t.Helper()
	lk, err := s.rival.Acquire(context.Background(), key)
	switch {
	case errors.Is(err, core.ErrNotAcquired):
		return false
	case err != nil:
		t.Fatalf("rival Acquire: %v", err)
	}
	if err := lk.Release(context.Background()); err != nil {
		t.Fatalf("rival Release: %v", err)
	}
	return true
}

func TestHandBackKeepsTheKeyTakenForTheRestOfTheHold(t *testing.T) {
	s := newHandBackSetup(t)
	lk := mustAcquire(t, s.holder, "report")
	s.advance(300 * time.Millisecond)

	if err := lk.HandBack(context.Background(), core.MinHold); err != nil {
		t.Fatalf("HandBack: %v", err)
	}
	// The holder is done with it at once, on a clock that does not move.
	if lk.Held() || !errors.Is(context.Cause(lk.Context()), core.ErrReleased) {
		t.Fatalf("after HandBack: Held %v, cause %v; want released", lk.Held(), context.Cause(lk.Context()))
	}
	if n := s.spy.countKey("release", "report"); n != 0 {
		t.Fatalf("%d releases sent; HandBack within the hold renews for the rest instead", n)
	}
	// The store keeps the key until one second after the acquisition.
	s.advance(699 * time.Millisecond)
	if s.rivalTakes(t, "report") {
		t.Fatal("the rival took the key 999ms after it was acquired, within MinHold")
	}
	s.advance(time.Millisecond)
	if !s.rivalTakes(t, "report") {
		t.Fatal("the key is still taken MinHold after it was acquired")
	}
	if err := lk.HandBack(context.Background(), core.MinHold); err != nil {
		t.Fatalf("a second HandBack: %v, want nil like a second Release", err)
	}
}

func TestHandBackAfterTheHoldReleases(t *testing.T) {
	s := newHandBackSetup(t)
	lk := mustAcquire(t, s.holder, "report")
	s.advance(time.Second)
	if err := lk.HandBack(context.Background(), core.MinHold); err != nil {
		t.Fatalf("HandBack: %v", err)
	}
	if n := s.spy.countKey("release", "report"); n != 1 {
		t.Fatalf("%d releases sent, want 1", n)
	}
	if !s.rivalTakes(t, "report") {
		t.Fatal("the key is still taken after a HandBack past the hold")
	}

	// A hold of zero is a release, at once.
	lk = mustAcquire(t, s.holder, "other")
	if err := lk.HandBack(context.Background(), 0); err != nil {
		t.Fatalf("HandBack(0): %v", err)
	}
	if !s.rivalTakes(t, "other") {
		t.Fatal("the key is still taken after HandBack(0)")
	}
}

func TestHandBackRoundsTheRestUpToAMillisecond(t *testing.T) {
	s := newHandBackSetup(t)
	lk := mustAcquire(t, s.holder, "report")
	s.advance(time.Microsecond)
	if err := lk.HandBack(context.Background(), 10*time.Millisecond); err != nil {
		t.Fatalf("HandBack: %v", err)
	}
	// 9.999ms were left: the store is asked for 10ms (a ttl is whole
	// milliseconds), rounded up, not down to 9ms, which would free the key
	// before the hold ends.
	s.advance(9500 * time.Microsecond)
	if s.rivalTakes(t, "report") {
		t.Fatal("the rival took the key 9.5ms into a 10ms hold")
	}
	s.advance(500 * time.Microsecond)
	if !s.rivalTakes(t, "report") {
		t.Fatal("the key is still taken 10ms after the hand-back")
	}
}

func TestHandBackOfALostLockReportsTheLoss(t *testing.T) {
	s := newHandBackSetup(t)
	lk := mustAcquire(t, s.holder, "report")
	// The store expires the lock while the holder is paused; on resuming,
	// its renewal is refused.
	s.storeClock.Advance(2 * time.Minute)
	s.clock.Advance(30 * time.Second)
	var lost *core.LockLostError
	if err := lk.HandBack(context.Background(), core.MinHold); !errors.As(err, &lost) || lost.Reason != core.LostRefused {
		t.Fatalf("HandBack of a lost lock: %v, want its *LockLostError", err)
	}
}
