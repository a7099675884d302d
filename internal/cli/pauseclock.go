package cli

import (
	"slices"
	"sync"
	"time"

	"github.com/leasehold/leasehold/core"
)

// pausableClock is the system clock, except that while it is paused the
// callbacks of its timers are held instead of run: a model of a
// stop-the-world pause (a long GC, a frozen VM) in which time goes on but the
// process does nothing. Resume runs the held callbacks, in the order their
// timers fired, before it returns.
type pausableClock struct {
	mu      sync.Mutex
	paused  bool
	held    []*pauseTimer
	resumed chan struct{} // closed once the clock runs again
}

var _ core.Clock = (*pausableClock)(nil)

func newPausableClock() *pausableClock {
	c := &pausableClock{resumed: make(chan struct{})}
	close(c.resumed)
	return c
}

type pauseTimer struct {
	c       *pausableClock
	f       func()
	t       *time.Timer
	held    bool
	started bool
	stopped bool
}

func (c *pausableClock) Now() time.Time { return time.Now() }

func (c *pausableClock) AfterFunc(d time.Duration, f func()) core.Timer {
	pt := &pauseTimer{c: c, f: f}
	c.mu.Lock()
	defer c.mu.Unlock()
	pt.t = time.AfterFunc(d, pt.fire)
	return pt
}

func (pt *pauseTimer) fire() {
	c := pt.c
	c.mu.Lock()
	if pt.stopped || pt.started || pt.held {
		c.mu.Unlock()
		return
	}
	if c.paused {
		pt.held = true
		c.held = append(c.held, pt)
		c.mu.Unlock()
		return
	}
	pt.started = true
	c.mu.Unlock()
	pt.f()
}

// Stop prevents the call if it has not started, held or not.
func (pt *pauseTimer) Stop() bool {
	c := pt.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if pt.started || pt.stopped {
		return false
	}
	pt.stopped = true
	pt.t.Stop()
	if pt.held {
		c.held = slices.DeleteFunc(c.held, func(h *pauseTimer) bool { return h == pt })
	}
	return true
}

// Pause holds every timer callback from now on, until Resume.
func (c *pausableClock) Pause() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.paused {
		c.paused = true
		c.resumed = make(chan struct{})
	}
}

// Resume runs the held callbacks, one after the other in the order their
// timers fired, and then lets Frozen's waiters go.
func (c *pausableClock) Resume() {
	c.mu.Lock()
	if !c.paused {
		c.mu.Unlock()
		return
	}
	c.paused = false
	held := c.held
	c.held = nil
	for _, pt := range held {
		pt.held, pt.started = false, true
	}
	resumed := c.resumed
	c.mu.Unlock()
	for _, pt := range held {
		pt.f()
	}
	close(resumed)
}

// Frozen returns a channel that is closed once the clock has resumed and
// run its held callbacks: code of the paused instance waits on it, as if it
// had been stopped with the rest of the process.
func (c *pausableClock) Frozen() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.resumed
}
