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

	mu      sync.Mutex
	locks   indexedHeap[*Lock]
	timer   Timer
	timerAt time.Time
	stopped bool
	firing  sync.WaitGroup
}

func newScheduler(l *Locks) *scheduler {
	s := &scheduler{l: l}
	s.locks.less = func(a, b *Lock) bool { return a.due.Before(b.due) }
	s.locks.index = func(lk *Lock) *int { return &lk.heapIndex }
	s.ctx, s.cancel = context.WithCancel(l.base)
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
		if s.timer != nil {
			s.timer.Stop()
			s.timer, s.timerAt = nil, time.Time{}
		}
		return
	}
	next := s.locks.first().due
	if s.timer != nil && s.timerAt.Equal(next) {
		return
	}
	if s.timer != nil {
		s.timer.Stop()
	}
	s.timer, s.timerAt = s.l.clock.AfterFunc(next.Sub(s.l.clock.Now()), s.fire), next
}

// fire runs every renewal that is due, and waits for them.
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
	for s.locks.len() > 0 && !s.locks.first().due.After(now) {
		due = append(due, s.locks.pop())
	}
	s.timer, s.timerAt = nil, time.Time{}
	s.arm()
	s.mu.Unlock()

	type renewal struct {
		lk       *Lock
		deadline time.Time
	}
	var renewals []renewal
	for _, lk := range due {
		if deadline, send := lk.tick(now); send {
			renewals = append(renewals, renewal{lk, deadline})
		}
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

// tick is a due lock's turn: declare it lost if its deadline has passed,
// else say that a renewal is to be sent (unless one is still in flight).
func (lk *Lock) tick(now time.Time) (deadline time.Time, send bool) {
	lk.mu.Lock()
	if lk.state != stateHeld {
		lk.mu.Unlock()
		return deadline, false
	}
	if !now.Before(lk.deadline) {
		lk.mu.Unlock()
		lk.lose(LostDeadline)
		return deadline, false
	}
	deadline = lk.deadline
	inFlight := lk.renewing != nil
	if !inFlight {
		lk.renewing = make(chan struct{})
	}
	lk.mu.Unlock()
	// Come back at the deadline in any case: a renewal that hangs must not
	// keep the holder believing past it.
	lk.locks.sched.schedule(lk, deadline)
	return deadline, !inFlight
}

// renew sends one renewal, sent at sent, and acts on the answer.
func (lk *Lock) renew(sent, deadline time.Time) {
	l := lk.locks
	// The call cannot help once the deadline has passed (the deadline is
	// enforced by the scheduler, not by this timeout, which only keeps a
	// hung call from blocking the next renewal for long). The floor keeps
	// a retry sent just before the deadline from timing out at once.
	ctx, cancel := context.WithTimeout(l.sched.ctx, max(deadline.Sub(sent), time.Second))
	ok, err := l.store.Renew(ctx, lk.key, lk.owner, lk.ttl)
	cancel()

	lk.mu.Lock()
	close(lk.renewing)
	lk.renewing = nil
	if lk.state != stateHeld {
		lk.mu.Unlock()
		return
	}
	switch {
	case err != nil:
		lk.lastErr = err
		retry := l.clock.Now().Add(retryDelay(lk.ttl))
		if retry.After(lk.deadline) {
			retry = lk.deadline
		}
		lk.mu.Unlock()
		l.log.Warn("leasehold: renewal failed; retrying until the deadline", "key", lk.key, "token", lk.token, "deadline", deadline, "err", err)
		l.sched.schedule(lk, retry)
	case !ok:
		lk.mu.Unlock()
		lk.lose(LostRefused)
	default:
		lk.deadline, lk.lastErr = holderDeadline(sent, lk.ttl), nil
		lk.mu.Unlock()
		l.sched.schedule(lk, sent.Add(lk.ttl/3))
	}
}

// retryDelay spaces retries of a failed renewal: several fit before the
// deadline, without hammering a store that is down.
func retryDelay(ttl time.Duration) time.Duration {
	return max(ttl/10, time.Millisecond)
}
