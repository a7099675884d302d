package core

import (
	"sync"
	"time"
)

// ManualClock is a [Clock] whose time moves only when a test calls
// [ManualClock.Advance]. A [Locks] instance on a manual clock that is never
// advanced behaves as a paused process: it renews nothing and notices
// nothing until its clock moves. [Locks.Close] does not wait on it.
//
// The zero value is not usable; call [NewManualClock].
type ManualClock struct {
	mu      sync.Mutex
	now     time.Time
	timers  indexedHeap[*manualTimer]
	seq     uint64
	advance sync.Mutex // serialises Advance calls
}

// NewManualClock returns a manual clock that reads start until advanced.
func NewManualClock(start time.Time) *ManualClock {
	c := &ManualClock{now: start}
	c.timers.less = func(a, b *manualTimer) bool {
		if a.when.Equal(b.when) {
			return a.seq < b.seq
		}
		return a.when.Before(b.when)
	}
	c.timers.index = func(t *manualTimer) *int { return &t.index }
	return c
}

// Now returns the clock's current time.
func (c *ManualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// AfterFunc schedules f to be called by Advance once the clock has moved by d.
// A d of zero or less is due at the next Advance, even Advance(0).
func (c *ManualClock) AfterFunc(d time.Duration, f func()) Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	t := &manualTimer{clock: c, when: c.now.Add(max(d, 0)), seq: c.seq, f: f, index: -1}
	c.timers.push(t)
	return t
}

// Advance moves the clock forward by d. On the way it calls every timer that
// falls due, in order of due time (then of scheduling), each with the clock
// set to its due time, and waits for each to return. Timers run by [Locks]
// wait for the store calls they make, so when Advance returns every renewal
// it triggered has reached the store, and timers those calls scheduled
// within the window have fired too.
func (c *ManualClock) Advance(d time.Duration) {
	c.advance.Lock()
	defer c.advance.Unlock()
	c.mu.Lock()
	target := c.now.Add(max(d, 0))
	c.mu.Unlock()
	for {
		c.mu.Lock()
		if c.timers.len() == 0 || c.timers.first().when.After(target) {
			c.now = target
			c.mu.Unlock()
			return
		}
		t := c.timers.pop()
		if t.when.After(c.now) {
			c.now = t.when
		}
		c.mu.Unlock()
		t.f()
	}
}

// Pending reports how many timers are scheduled and not yet fired.
func (c *ManualClock) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.timers.len()
}

type manualTimer struct {
	clock *ManualClock
	when  time.Time
	seq   uint64
	f     func()
	index int
}

// Reset schedules the call for d after the clock's current time, whether it
// is pending, stopped or has run, and reports whether it was pending: a
// Timer that [Locks] reuses, as it reuses a *time.Timer.
func (t *manualTimer) Reset(d time.Duration) bool {
	c := t.clock
	c.mu.Lock()
	defer c.mu.Unlock()
	pending := t.index >= 0
	if pending {
		c.timers.remove(t)
	}
	c.seq++
	t.when, t.seq = c.now.Add(max(d, 0)), c.seq
	c.timers.push(t)
	return pending
}

func (t *manualTimer) Stop() bool {
	t.clock.mu.Lock()
	defer t.clock.mu.Unlock()
	if t.index < 0 {
		return false
	}
	t.clock.timers.remove(t)
	return true
}
