package core

import (
	"sync"
	"time"
)

// lease is what a held lock knows about its lease in the store: whether it
// is still held, until when the holder may trust it, and whether a renewal
// is on its way. Its methods are the lock's transitions. They only read
// and write this state, under its mutex, and say what is to be done; the
// keeper (keeper.go) does it: it sends the renewals, keeps the schedule and
// ends the lock. The loss rules therefore live here, testable without a
// clock, a scheduler or a store.
type lease struct {
	mu    sync.Mutex
	state lockState
	// deadline is when the holder stops trusting the lease: ttl less the
	// safety margin after the last confirmed acquisition or renewal was
	// sent (see holderDeadline).
	deadline time.Time
	// renewing is closed when the renewal in flight returns; nil when none is.
	renewing chan struct{}
	lastErr  error // the last failed renewal's error
	lostErr  *LockLostError
	onEnd    []func(cause error)
}

type lockState int

const (
	stateHeld lockState = iota
	stateReleased
	stateLost
)

// step is what the keeper does with a lock whose turn has come.
type step int

const (
	stepDrop step = iota // released or lost already: forget it
	stepSend             // send a renewal now
	stepWait             // a renewal is still in flight: let it answer
	stepLose             // the deadline has passed: the lock is lost
)

// turn is the lock's transition when the keeper's timer reaches it at now:
// past the deadline it is lost; otherwise a renewal is to be sent, unless
// one is still in flight. On stepSend the renewal counts as in flight from
// here. With stepSend and stepWait, deadline is when the keeper must look
// again in any case: a renewal that hangs must not keep the holder
// believing past it.
func (s *lease) turn(now time.Time) (_ step, deadline time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.state != stateHeld:
		return stepDrop, deadline
	case !now.Before(s.deadline):
		return stepLose, deadline
	case s.renewing != nil:
		return stepWait, s.deadline
	}
	s.renewing = make(chan struct{})
	return stepSend, s.deadline
}

// verdict is what the answer to a renewal means for the lock.
type verdict struct {
	// lost is the reason the lock is lost, or 0.
	lost LossReason
	// due is when the next renewal is due, if the lease was renewed; zero
	// otherwise. The keeper may send it earlier, never later.
	due time.Time
	// retry is when to try again after a failed call, if it failed; zero
	// otherwise. It is never after the deadline.
	retry time.Time
}

// answer is the lock's transition when the renewal sent at sent comes back
// at now with (ok, err): a confirmed renewal moves the deadline and makes
// the next renewal due a third of the ttl after sent; a refusal loses the
// lock; an error is retried every retryDelay until the deadline, which it
// leaves where it was. A lock no longer held gets the zero verdict.
func (s *lease) answer(ttl time.Duration, sent, now time.Time, ok bool, err error) verdict {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.renewing != nil {
		close(s.renewing)
		s.renewing = nil
	}
	switch {
	case s.state != stateHeld:
		return verdict{}
	case err != nil:
		s.lastErr = err
		return verdict{retry: minTime(now.Add(retryDelay(ttl)), s.deadline)}
	case !ok:
		return verdict{lost: LostRefused}
	}
	s.deadline, s.lastErr = holderDeadline(sent, ttl), nil
	return verdict{due: sent.Add(ttl / 3)}
}

// lose is the transition to lost, for reason. It returns the error that is
// now the lock's cause and the hooks to run, or ok false if the lock had
// ended already.
func (s *lease) lose(key string, token int64, reason LossReason) (lost *LockLostError, hooks []func(error), ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state != stateHeld {
		return nil, nil, false
	}
	s.state = stateLost
	s.lostErr = &LockLostError{Key: key, Token: token, Reason: reason, Err: s.lastErr}
	return s.lostErr, s.takeHooks(), true
}

// release is the transition to released. It returns the hooks to run and
// the renewal in flight (nil if none), or, if the lock had ended already,
// ok false and the *LockLostError of a lost lock (nil for one released).
func (s *lease) release() (hooks []func(error), renewing chan struct{}, lost error, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch s.state {
	case stateReleased:
		return nil, nil, nil, false
	case stateLost:
		return nil, nil, s.lostErr, false
	}
	s.state = stateReleased
	return s.takeHooks(), s.renewing, nil, true
}

// trusted reports whether the lease is held and its deadline is after now.
func (s *lease) trusted(now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state == stateHeld && now.Before(s.deadline)
}

// lostError returns the lease's *LockLostError if it was lost, else nil.
func (s *lease) lostError() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state == stateLost {
		return s.lostErr
	}
	return nil
}

// whenEnded adds fn to the hooks and reports true while the lease is held;
// otherwise it returns the cause the lease ended with, and false.
func (s *lease) whenEnded(fn func(cause error)) (cause error, held bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch s.state {
	case stateHeld:
		s.onEnd = append(s.onEnd, fn)
		return nil, true
	case stateLost:
		return s.lostErr, false
	}
	return ErrReleased, false
}

func (s *lease) takeHooks() []func(error) {
	hooks := s.onEnd
	s.onEnd = nil
	return hooks
}

func runHooks(hooks []func(error), cause error) {
	for _, fn := range hooks {
		fn(cause)
	}
}

// retryDelay spaces retries of a failed renewal: several fit before the
// deadline, without hammering a store that is down.
func retryDelay(ttl time.Duration) time.Duration {
	return max(ttl/10, time.Millisecond)
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}
