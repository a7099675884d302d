package core_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/leasehold/leasehold/core"
)

func TestManualClockFiresInOrder(t *testing.T) {
	c := core.NewManualClock(t0)
	var fired []string
	at := func(name string) func() {
		return func() { fired = append(fired, fmt.Sprintf("%s@%v", name, c.Now().Sub(t0))) }
	}
	c.AfterFunc(3*time.Second, at("c"))
	c.AfterFunc(time.Second, at("a"))
	c.AfterFunc(2*time.Second, at("b1"))
	c.AfterFunc(2*time.Second, at("b2")) // same time: in order of scheduling
	c.AfterFunc(10*time.Second, at("late"))
	if c.Pending() != 5 {
		t.Fatalf("Pending() = %d", c.Pending())
	}
	if len(fired) != 0 || !c.Now().Equal(t0) {
		t.Fatal("timers fired or time moved before Advance")
	}

	c.Advance(5 * time.Second)
	if want := []string{"a@1s", "b1@2s", "b2@2s", "c@3s"}; !slices.Equal(fired, want) {
		t.Fatalf("fired %v, want %v", fired, want)
	}
	if !c.Now().Equal(t0.Add(5*time.Second)) || c.Pending() != 1 {
		t.Fatalf("after Advance: now %v, %d pending", c.Now().Sub(t0), c.Pending())
	}
	c.Advance(5*time.Second - 1)
	if len(fired) != 4 {
		t.Fatal("a timer fired before its time")
	}
	c.Advance(1)
	if fired[len(fired)-1] != "late@10s" {
		t.Fatalf("fired %v", fired)
	}
}

// Timers scheduled by a firing timer fire within the same Advance when due
// inside it: renewals reschedule themselves this way.
func TestManualClockChains(t *testing.T) {
	c := core.NewManualClock(t0)
	var ticks []time.Duration
	var tick func()
	tick = func() {
		ticks = append(ticks, c.Now().Sub(t0))
		c.AfterFunc(10*time.Second, tick)
	}
	c.AfterFunc(10*time.Second, tick)
	c.Advance(35 * time.Second)
	if want := seconds(10, 20, 30); !slices.Equal(ticks, want) {
		t.Fatalf("ticks at %v, want %v", ticks, want)
	}
	if c.Pending() != 1 {
		t.Fatalf("Pending() = %d, want the tick at 40s", c.Pending())
	}
}

func TestManualClockNonPositiveDelay(t *testing.T) {
	c := core.NewManualClock(t0)
	c.Advance(time.Minute)
	now := c.Now()
	var fired []time.Time
	c.AfterFunc(0, func() { fired = append(fired, c.Now()) })
	c.AfterFunc(-time.Hour, func() { fired = append(fired, c.Now()) })
	if len(fired) != 0 {
		t.Fatal("AfterFunc ran f at once instead of at the next Advance")
	}
	c.Advance(0)
	if len(fired) != 2 || !fired[0].Equal(now) || !fired[1].Equal(now) {
		t.Fatalf("fired at %v, want twice at %v", fired, now)
	}
	if !c.Now().Equal(now) {
		t.Fatal("Advance(0) moved the clock")
	}
	c.Advance(-time.Hour)
	if !c.Now().Equal(now) {
		t.Fatal("a negative Advance moved the clock back")
	}
}

func TestManualClockStop(t *testing.T) {
	c := core.NewManualClock(t0)
	fired := 0
	stopped := c.AfterFunc(time.Second, func() { t.Error("a stopped timer fired") })
	kept := c.AfterFunc(time.Second, func() { fired++ })
	if !stopped.Stop() {
		t.Fatal("Stop of a pending timer returned false")
	}
	if stopped.Stop() {
		t.Fatal("a second Stop returned true")
	}
	if c.Pending() != 1 {
		t.Fatalf("Pending() = %d after Stop", c.Pending())
	}
	c.Advance(time.Second)
	if fired != 1 {
		t.Fatal("the other timer did not fire")
	}
	if kept.Stop() {
		t.Fatal("Stop after firing returned true")
	}
	// A timer stopped by another timer's callback does not fire.
	var victim core.Timer
	c.AfterFunc(time.Second, func() { victim.Stop() })
	victim = c.AfterFunc(2*time.Second, func() { t.Error("timer stopped by a callback fired") })
	c.Advance(time.Minute)
}

func TestManualClockReset(t *testing.T) {
	c := core.NewManualClock(t0)
	var at []time.Duration
	tm := c.AfterFunc(time.Second, func() { at = append(at, c.Now().Sub(t0)) })
	r := tm.(interface{ Reset(time.Duration) bool })
	if !r.Reset(3 * time.Second) { // pending: moved
		t.Fatal("Reset of a pending timer reported false")
	}
	c.Advance(5 * time.Second)
	if r.Reset(time.Second) { // ran: scheduled again
		t.Fatal("Reset of a timer that ran reported true")
	}
	c.Advance(5 * time.Second)
	tm.Stop()
	r.Reset(2 * time.Second) // stopped: scheduled again
	c.Advance(5 * time.Second)
	if want := []time.Duration{3 * time.Second, 6 * time.Second, 12 * time.Second}; !slices.Equal(at, want) || c.Pending() != 0 {
		t.Fatalf("calls at %v, %d pending; want %v, none", at, c.Pending(), want)
	}
}
