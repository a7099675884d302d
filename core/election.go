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
	// Candidates campaign every TTL/3, and a dead leader is replaced within
	// about TTL + TTL/3.
	TTL time.Duration
}

// Election is this instance's candidacy for the leadership of a key, started
// by [Locks.Elect]. It campaigns until [Election.Stop] or [Locks.Close].
type Election struct {
	locks    *Locks
	key      string
	campaign Campaign

	mu       sync.Mutex
	lead     *Lock
	reason   error // why this instance stepped down, for OnLost
	timer    Timer
	stopped  bool
	inflight sync.WaitGroup
}

// Elect makes this instance a candidate for the leadership of key. Every
// candidate campaigns at once and then every TTL/3; the one that takes the
// key leads, its lease renewed while it lives, and the others take over when
// it dies (after TTL) or steps down (at their next campaign). A key that
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
	e.run()
	return e, nil
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
	e.inflight.Add(1)
	leading := e.lead != nil
	e.mu.Unlock()
	defer e.inflight.Done()

	if !leading {
		e.try()
	}
	e.mu.Lock()
	if !e.stopped {
		e.timer = e.locks.clock.AfterFunc(e.campaign.TTL/3, e.run)
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
		e.lead = nil
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
