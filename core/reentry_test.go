package core_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/leasehold/leasehold/core"
	"github.com/leasehold/leasehold/core/coretest"
)

// advanceOrDeadlock advances clock in another goroutine and fails the test
// if Advance never returns: a callback that closed the instance from inside
// the renewal it runs on would hang it.
func advanceOrDeadlock(t *testing.T, clock *core.ManualClock, d time.Duration) {
	t.Helper()
	done := make(chan struct{})
	go func() { clock.Advance(d); close(done) }()
	recvWithin(t, "Advance to return (a callback that calls Close must not deadlock)", done)
}

func TestEventHandlerMayCloseOnLockLost(t *testing.T) {
	storeClock := core.NewManualClock(t0)
	store := core.NewMemoryStore(core.WithMemoryClock(storeClock))
	clock := core.NewManualClock(t0)
	var l *core.Locks
	closed := make(chan error, 1)
	l = coretest.NewLocks(t, store, core.WithClock(clock), core.WithEventHandler(func(ev core.Event) {
		if ev.Type == core.EventLockLost {
			closed <- l.Close(context.Background())
		}
	}))
	lost := mustAcquire(t, l, "lost", core.WithTTL(30*time.Second))
	other := mustAcquire(t, l, "other", core.WithTTL(time.Hour))
	storeClock.Advance(31 * time.Second) // this instance is paused past the ttl
	advanceOrDeadlock(t, clock, 10*time.Second)

	if err := recvWithin(t, "Close from the handler", closed); err != nil {
		t.Fatalf("Close from the event handler: %v", err)
	}
	if !errors.As(context.Cause(lost.Context()), new(*core.LockLostError)) {
		t.Fatalf("cause of the lost lock = %v; want *LockLostError", context.Cause(lost.Context()))
	}
	if other.Held() {
		t.Fatal("Close from the handler left another lock held")
	}
	if _, err := l.Acquire(context.Background(), "x"); !errors.Is(err, core.ErrClosed) {
		t.Fatalf("Acquire after Close from a handler = %v; want ErrClosed", err)
	}
}

func TestElectionCallbacksMayStopAndClose(t *testing.T) {
	t.Run("Stop from OnAcquired", func(t *testing.T) {
		clock := core.NewManualClock(t0)
		store := core.NewMemoryStore(core.WithMemoryClock(clock))
		holder := mustAcquire(t, coretest.NewLocks(t, store, core.WithClock(clock)), "feed")
		l := coretest.NewLocks(t, store, core.WithClock(clock))
		var e *core.Election
		stopped := make(chan error, 1)
		lostWith := make(chan error, 1)
		e, err := l.Elect("feed", core.Campaign{
			TTL: 30 * time.Second,
			// The first campaign (inside Elect) loses to holder, so e is
			// set by the time a later campaign wins.
			OnAcquired: func(*core.Lock) error {
				stopped <- e.Stop(context.Background())
				return nil
			},
			OnLost: func(err error) { lostWith <- err },
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := holder.Release(context.Background()); err != nil {
			t.Fatal(err)
		}
		advanceOrDeadlock(t, clock, 10*time.Second) // the next campaign wins
		if err := recvWithin(t, "Stop from OnAcquired", stopped); err != nil {
			t.Fatalf("Stop from OnAcquired: %v", err)
		}
		if err := recvWithin(t, "OnLost", lostWith); err != nil {
			t.Fatalf("OnLost after Stop = %v; want nil (stepped down)", err)
		}
		if e.Leader() {
			t.Fatal("still leading after Stop from OnAcquired")
		}
	})
	t.Run("Close from OnLost", func(t *testing.T) {
		storeClock := core.NewManualClock(t0)
		store := core.NewMemoryStore(core.WithMemoryClock(storeClock))
		clock := core.NewManualClock(t0)
		var l *core.Locks
		closed := make(chan error, 1)
		l = coretest.NewLocks(t, store, core.WithClock(clock))
		_, err := l.Elect("feed", core.Campaign{
			TTL:        30 * time.Second,
			OnAcquired: func(*core.Lock) error { return nil },
			OnLost: func(err error) {
				if errors.As(err, new(*core.LockLostError)) {
					closed <- l.Close(context.Background())
				}
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		storeClock.Advance(31 * time.Second)
		advanceOrDeadlock(t, clock, 10*time.Second)
		if err := recvWithin(t, "Close from OnLost", closed); err != nil {
			t.Fatalf("Close from OnLost: %v", err)
		}
	})
}
