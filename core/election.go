package core

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Campaign describes a candidate in [Locks.Elect].
type Campaign struct {
	// OnAcquired is called when this instance becomes the leader, with the
	// leadership's lock: its fencing token, and a context that ends with the
	// leadership. Start the leader's work bound to lead.Context() and return;
	// returning an error, or panicking, makes the instance step down.
	OnAcquired func(lead *Lock) error
	// OnLost is called when the leadership ends: err is the
	// [*LockLostError] when the lease was lost, the OnAcquired error when
	// that made the instance step down, and nil when it stepped down by
	// [Election.Stop] or [Locks.Close]. It may be nil.
	OnLost func(err error)
	// TTL is the leadership lease's ttl; zero means the instance's default.
	// Candidates campaign every TTL/3, and at once when a release may have
	// freed the key (see [Notifier]); a dead leader is replaced within about
	// TTL + TTL/3.
	TTL time.Duration
}

// Election is this instance's candidacy for the leadership of a key, started
// by [Locks.Elect]. It campaigns until [Election.Stop] or [Locks.Close].
type Election struct {
	locks    *Locks
	key      string
	campaign Campaign

	mu          sync.Mutex
	lead        *Lock
	reason      error // why this instance stepped down, for OnLost
	timer       Timer
	stopped     bool
	campaigning bool // a campaign is under way
	again       bool // the key may have become free during it: campaign again at once
	rested      bool // this instance stepped down: no campaign before the next scheduled one
	inflight    sync.WaitGroup

	// unsubscribe ends the candidacy's watch of its key (see watch).
	unsubscribe func()
	watching    chan struct{} // closed when the candidacy stops
}

// Elect makes this instance a candidate for the leadership of key. Every
// candidate campaigns at once and then every TTL/3; the one that takes the
// key leads, its lease renewed while it lives, and the others take over when
// it dies (after TTL) or steps down (at once when its release wakes them:
// through the store's [Notifier], or in this process; else at their next
// campaign). A key that
// collides with a job's is refused with [ErrDuplicateKey].
func (l *Locks) Elect(key string, c Campaign) (*Election, error) {
	if c.OnAcquired == nil {
		return nil, fmt.Errorf("%w: nil OnAcquired", ErrInvalidArgument)
	}
	if c.TTL == 0 {
		c.TTL = l.ttl
	}
	if err := ValidateKey(key); err != nil {
		return nil, err
	}
	if err := ValidateTTL(c.TTL); err != nil {
		return nil, layer(err, "election %q", key)
	}
	e := &Election{locks: l, key: key, campaign: c}
	what := fmt.Sprintf("election %q", key)
	if err := l.guards.register(what, map[string]string{key: "its lease"}, func() { l.guards.elections = append(l.guards.elections, e) }); err != nil {
		return nil, err
	}
	w := newWaiter()
	_, e.unsubscribe = l.subscribe(key, w)
	e.watching = make(chan struct{})
	go e.watch(w)
	e.run()
	return e, nil
}

// watch campaigns at once, not at the next TTL/3, whenever the key may have
// become free: a release by this instance's Locks, or one the store
// notifies (see [Notifier]). A standby thus takes over from a leader that
// stepped down within a few round trips.
func (e *Election) watch(w *waiter) {
	for {
		select {
		case <-w.ch:
			e.wake()
		case <-e.watching:
			return
		}
	}
}

// wake starts a campaign now, unless this instance leads, has stopped, or
// is campaigning (then it campaigns again once that one ends).
func (e *Election) wake() {
	e.mu.Lock()
	defer e.mu.Unlock()
	switch {
	case e.stopped || e.lead != nil || e.rested:
	case e.campaigning:
		e.again = true
	default:
		// A campaign now, on the instance's clock as every campaign. The
		// scheduled one stays: stopping it and scheduling this one would
		// be two steps a clock's tick could fall between, losing both.
		// Whichever runs second finds the other done or running (see run).
		e.locks.clock.AfterFunc(0, e.run)
	}
}

// Key returns the election's key.
func (e *Election) Key() string { return e.key }

// Leader reports whether this instance leads now.
func (e *Election) Leader() bool {
	e.mu.Lock()
	lead := e.lead
	e.mu.Unlock()
	return lead != nil && lead.Held()
}

// run campaigns once and schedules the next campaign.
func (e *Election) run() {
	e.mu.Lock()
	if e.stopped {
		e.mu.Unlock()
		return
	}
	if e.campaigning {
		// A woken campaign and a scheduled one met: the one running
		// started after the wake, so it covers both.
		e.mu.Unlock()
		return
	}
	e.inflight.Add(1)
	leading := e.lead != nil
	e.campaigning, e.rested = true, false
	e.mu.Unlock()
	defer e.inflight.Done()

	if !leading {
		e.try()
	}
	e.mu.Lock()
	e.campaigning = false
	next := e.campaign.TTL / 3
	if e.again && e.lead == nil && !e.rested {
		next = 0
	}
	e.again = false
	if !e.stopped {
		if e.timer != nil {
			e.timer.Stop() // one schedule, whichever campaign ran
		}
		e.timer = e.locks.clock.AfterFunc(next, e.run)
	}
	e.mu.Unlock()
}

// try takes the leadership if the key is free.
func (e *Election) try() {
	l := e.locks
	lead, err := l.Acquire(context.Background(), e.key, WithTTL(e.campaign.TTL), asKind(KindLeadership))
	if err != nil {
		if !errors.Is(err, ErrNotAcquired) && !errors.Is(err, ErrClosed) {
			l.log.Warn("leasehold: campaign failed", "key", e.key, "err", err)
		}
		return
	}
	e.mu.Lock()
	if e.stopped {
		e.mu.Unlock()
		_ = lead.Release(context.Background())
		return
	}
	e.lead, e.reason = lead, nil
	e.mu.Unlock()

	l.log.Info("leasehold: leadership acquired", "key", e.key, "token", lead.Token())
	l.emit(Event{Type: EventLeadershipAcquired, Key: e.key, Token: lead.Token()})
	lead.whenEnded(func(cause error) { e.ended(lead, cause) })

	if err := e.callAcquired(lead); err != nil {
		l.log.Error("leasehold: leader stepping down: OnAcquired failed", "key", e.key, "err", err)
		e.mu.Lock()
		e.reason = err
		e.mu.Unlock()
		_ = lead.Release(context.Background())
	}
}

func (e *Election) callAcquired(lead *Lock) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("leasehold: OnAcquired panicked: %v", r)
		}
	}()
	e.locks.callback(func() { err = e.campaign.OnAcquired(lead) })
	return err
}

// ended reports the end of a leadership.
func (e *Election) ended(lead *Lock, cause error) {
	e.mu.Lock()
	if e.lead == lead {
		// Its own release wakes this instance's watch too: the others
		// take over, and this one waits for its next scheduled campaign.
		e.lead, e.rested = nil, true
	}
	reason := e.reason
	e.mu.Unlock()

	var lost *LockLostError
	if errors.As(cause, &lost) {
		reason = lost
	}
	l := e.locks
	if errors.As(reason, &lost) {
		l.log.Info("leasehold: leadership lost", "key", e.key, "token", lead.Token(), "cause", lost.Reason.String(), "err", reason)
	} else if reason != nil {
		l.log.Info("leasehold: stepped down", "key", e.key, "token", lead.Token(), "err", reason)
	} else {
		l.log.Info("leasehold: stepped down", "key", e.key, "token", lead.Token())
	}
	l.emit(Event{Type: EventLeadershipLost, Key: e.key, Token: lead.Token(), Err: reason})
	if e.campaign.OnLost != nil {
		defer func() {
			if r := recover(); r != nil {
				l.log.Error("leasehold: OnLost panicked", "key", e.key, "panic", r)
			}
		}()
		l.callback(func() { e.campaign.OnLost(reason) })
	}
}

// Stop ends the candidacy: it stops campaigning and, if this instance leads,
// steps down (releases the lease), so another candidate leads at its next
// campaign rather than a ttl later. The key is then free for a new
// [Locks.Elect] on this instance. Stop (and [Locks.Close]) may be called
// from OnAcquired or OnLost; it then does not wait for the campaign or
// renewal that is running the callback.
func (e *Election) Stop(ctx context.Context) error {
	if err := ValidateContext(ctx); err != nil {
		return err
	}
	e.mu.Lock()
	first := !e.stopped
	e.stopped = true
	if e.timer != nil {
		e.timer.Stop()
	}
	e.mu.Unlock()
	if first {
		close(e.watching)
		e.unsubscribe()
	}
	if e.locks.inCallback.Load() == 0 { // a callback may be running inside the campaign
		e.inflight.Wait()
	}
	if first {
		e.locks.guards.unregisterElection(e)
	}

	e.mu.Lock()
	lead := e.lead
	e.mu.Unlock()
	if lead == nil {
		return nil
	}
	err := lead.Release(ctx)
	var lost *LockLostError
	if errors.As(err, &lost) {
		return nil
	}
	return err
}
