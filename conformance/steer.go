package conformance

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// steered is the context the kit hands to a store call it steers. Client
// libraries look at a call's context before each round trip (rueidis,
// go-redis, pgx and database/sql call Done or Err before they write a
// command or wait for a connection), so the looks mark the gaps between a
// store method's round trips. At its pause-th look, steered stops the
// goroutine that looks until resume is called: the kit then changes the
// world (lets the lock expire, has another owner take the key) between two
// round trips of the call, deterministically, instead of hoping that a
// competing write lands in a window of tens of microseconds. pause 0 never
// stops; the context then only counts the looks.
//
// steered has a Done channel of its own, not its parent's, so that contexts
// derived from it look at it too (the context package would otherwise wire
// a child straight to the parent's channel). Its deadline cancels it, and
// cancel cancels it early. Value returns nil: the kit passes no values.
type steered struct {
	pause    int64
	looks    atomic.Int64
	paused   chan struct{} // closed when the call stops at its pause-th look
	pausedAt time.Time     // when it stopped; read only once paused is closed
	resume   chan struct{} // closed to let it go on
	// stopped is how long it stood still, once let go (the look may be
	// a watcher goroutine's, not the call's own).
	stopped atomic.Int64

	deadline time.Time
	done     chan struct{}
	timer    *time.Timer
	once     sync.Once
	mu       sync.Mutex
	err      error

	resumeOnce sync.Once
}

func newSteered(timeout time.Duration, pause int) *steered {
	s := &steered{
		pause:    int64(pause),
		paused:   make(chan struct{}),
		resume:   make(chan struct{}),
		deadline: time.Now().Add(timeout),
		done:     make(chan struct{}),
	}
	s.timer = time.AfterFunc(timeout, func() { s.cancel(context.DeadlineExceeded) })
	return s
}

// look counts a look at the context and, at the pause-th, waits for resume.
func (s *steered) look() {
	if s.looks.Add(1) == s.pause {
		s.pausedAt = time.Now()
		close(s.paused)
		<-s.resume
		s.stopped.Store(int64(time.Since(s.pausedAt)))
	}
}

// goOn lets a paused call continue; calling it again does nothing.
func (s *steered) goOn() { s.resumeOnce.Do(func() { close(s.resume) }) }

// cancel cancels the context with err (the first cancellation wins).
func (s *steered) cancel(err error) {
	s.once.Do(func() {
		s.mu.Lock()
		s.err = err
		s.mu.Unlock()
		close(s.done)
	})
}

// release frees the timer; the context then never times out.
func (s *steered) release() { s.timer.Stop() }

func (s *steered) Deadline() (time.Time, bool) { return s.deadline, true }
func (s *steered) Value(any) any               { return nil }

func (s *steered) Done() <-chan struct{} {
	s.look()
	return s.done
}

func (s *steered) Err() error {
	s.look()
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

var _ context.Context = (*steered)(nil)
