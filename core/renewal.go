package core

import (
	"context"
	"sync"
	"time"
)

// scheduler renews the held locks of one Locks instance. It keeps the locks
// in a heap by due time and arms one clock timer for the earliest, so an
// instance holding 10,000 locks holds one timer, not 10,000 goroutines.
// When the timer fires, the due renewals run concurrently and the firing
// waits for them: on a ManualClock, Advance returns only once every renewal
// it triggered has reached the store.
type scheduler struct {
	l *Locks
	// ctx is the parent of renewals. stop cancels it before it waits for
	// them: once Close has released the locks, a renewal stuck in the store
	// cannot help and must not hold up Close.
	ctx    context.Context
	cancel context.CancelFunc

	// batch is the store as a BatchRenewer, or nil.
	batch BatchRenewer

	// fireFn is s.fire, made once: each use of a method value allocates.
	fireFn func()

	mu    sync.Mutex
	locks indexedHeap[*Lock]
	// timer, once made, is reused when its clock's timers can be reset
	// (see Timer); timerAt is when it is due to fire, zero when it is not.
	timer   Timer
	timerAt time.Time
	stopped bool
	firing  sync.WaitGroup
}

// resetter is a Timer that can be scheduled again.
type resetter interface {
	Reset(d time.Duration) bool
}

func newScheduler(l *Locks) *scheduler {
	s := &scheduler{l: l}
	s.locks.less = func(a, b *Lock) bool { return a.due.Before(b.due) }
	s.locks.index = func(lk *Lock) *int { return &lk.heapIndex }
	s.ctx, s.cancel = context.WithCancel(l.base)
	s.batch, _ = l.store.(BatchRenewer)
	s.fireFn = s.fire
	return s
}

// schedule makes lk due at at, replacing its earlier due time.
func (s *scheduler) schedule(lk *Lock, at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return
	}
	lk.due = at
	if lk.heapIndex >= 0 {
		s.locks.fix(lk)
	} else {
		s.locks.push(lk)
	}
	s.arm()
}

func (s *scheduler) remove(lk *Lock) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if lk.heapIndex >= 0 {
		s.locks.remove(lk)
		s.arm()
	}
}

// arm points the timer at the earliest due lock. Callers hold s.mu.
func (s *scheduler) arm() {
	if s.locks.len() == 0 || s.stopped {
		if !s.timerAt.IsZero() {
			s.timer.Stop()
			s.timerAt = time.Time{}
		}
		return
	}
	next := s.locks.first().due
	if s.timerAt.Equal(next) {
		return
	}
	d := next.Sub(s.l.clock.Now())
	if r, ok := s.timer.(resetter); ok {
		// Moves a pending call, or schedules one again. A call already on
		// its way still runs: fire then finds nothing due, and re-arms.
		r.Reset(d)
	} else {
		if !s.timerAt.IsZero() {
			s.timer.Stop()
		}
		s.timer = s.l.clock.AfterFunc(d, s.fireFn)
	}
	s.timerAt = next
}

// fire runs every renewal that is due, and waits for them. With a store
// that renews in batches, locks due soon go with them (see dueSoon).
func (s *scheduler) fire() {
	now := s.l.clock.Now()
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		return
	}
	s.firing.Add(1)
	defer s.firing.Done()
	var due []*Lock
	for s.locks.len() > 0 {
		lk := s.locks.first()
		if lk.due.After(now) && (s.batch == nil || !dueSoon(lk, now)) {
			break
		}
		due = append(due, s.locks.pop())
	}
	if !s.timerAt.After(now) {
		s.timerAt = time.Time{} // this is its call; else it was reset since
	}
	s.arm()
	s.mu.Unlock()

	var renewals []renewal
	for _, lk := range due {
		if deadline, send := lk.tick(now); send {
			renewals = append(renewals, renewal{lk, deadline})
		}
	}
	if s.batch != nil {
		s.renewInBatches(s.batch, now, renewals)
		return
	}
	parallel(len(renewals), maxConcurrentRenewals, func(i int) {
		renewals[i].lk.renew(now, renewals[i].deadline)
	})
}

// stop cancels the timer and waits for a firing in progress, unless it is
// called from a callback, which may be running inside that firing.
func (s *scheduler) stop() {
	s.mu.Lock()
	s.stopped = true
	s.arm()
	s.mu.Unlock()
	s.cancel()
	if s.l.inCallback.Load() == 0 {
		s.firing.Wait()
	}
}

// maxConcurrentRenewals bounds the store calls one firing makes at once, so
// that locks taken together do not renew in a burst of thousands of calls.
const maxConcurrentRenewals = 32

// parallel calls fn(0) … fn(n-1), at most limit at a time, and waits.
func parallel(n, limit int, fn func(i int)) {
	var wg sync.WaitGroup
	sem := make(chan struct{}, limit)
	for i := range n {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			fn(i)
		}()
	}
	wg.Wait()
}

// renewalContext bounds a renewal sent at sent for a lock whose deadline
// is deadline. The call cannot help once the deadline has passed (the
// deadline is enforced by the scheduler, not by this timeout, which only
// keeps a hung call from blocking the next renewal for long). The floor
// keeps a retry sent just before the deadline from timing out at once.
func renewalContext(parent context.Context, sent, deadline time.Time) (context.Context, context.CancelFunc) {
	return context.WithTimeout(parent, max(deadline.Sub(sent), time.Second))
}

// retryDelay spaces retries of a failed renewal: several fit before the
// deadline, without hammering a store that is down.
func retryDelay(ttl time.Duration) time.Duration {
	return max(ttl/10, time.Millisecond)
}
