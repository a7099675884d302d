// Package gocronguard lets several instances of a service share one
// gocron (github.com/go-co-op/gocron/v2) schedule, through leasehold.
//
// gocron offers two ways to run a schedule on many instances, and this
// package implements both on a [core.Locks]:
//
//   - [Locker], for gocron.WithDistributedLocker: every instance fires every
//     tick; the first to take the job's lock runs it, the others skip it. The
//     lock is held for the run and at least [WithMinHold] after it began, so that
//     instances whose clocks fire the same tick a little later skip it too.
//   - [Elector], for gocron.WithDistributedElector: the instances elect a
//     leader with [core.Locks.Elect], and only the leader runs jobs. When it
//     shuts down another instance leads within a third of the ttl; when it
//     dies, within about the ttl.
//
// gocron keys a job's lock by the job's name, which defaults to the Go
// function's name. Name every job with gocron.WithName and keep the names
// stable across releases: during a rolling deploy, instances running old and
// new code must lock the same key, or both run the job.
package gocronguard

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-co-op/gocron/v2"
	"github.com/leasehold/leasehold/core"
)

// DefaultMinHold is how long, from the start of a run, a [Locker] keeps a
// job's lock by default: instances firing the same tick up to this much later
// find it taken.
const DefaultMinHold = time.Second

// Locker is a gocron.Locker that takes a leasehold lock for each run of a
// job. Create it with [NewLocker].
type Locker struct {
	locks   *core.Locks
	prefix  string
	ttl     time.Duration
	minHold time.Duration
}

var _ gocron.Locker = (*Locker)(nil)

// LockerOption configures a [Locker].
type LockerOption func(*Locker)

// WithKeyPrefix puts prefix before every job name to make the lock key
// (default: none, the key is the job's name).
func WithKeyPrefix(prefix string) LockerOption { return func(l *Locker) { l.prefix = prefix } }

// WithTTL sets the ttl of the run locks (default: the [core.Locks]
// instance's). A long run does not need a long ttl: its lock is renewed
// every ttl/3 while it runs. A crashed run's lock expires after ttl.
func WithTTL(ttl time.Duration) LockerOption { return func(l *Locker) { l.ttl = ttl } }

// WithMinHold sets how long, from the start of a run, the lock is kept even
// if the run ends sooner (default [DefaultMinHold]). Pick it above the spread
// between the instances' clocks and below the job's interval; 0 releases
// the lock as soon as the run ends, which lets an instance that fires late
// run the same tick again.
func WithMinHold(d time.Duration) LockerOption { return func(l *Locker) { l.minHold = d } }

// NewLocker returns a gocron.Locker on locks, for
// gocron.WithDistributedLocker or gocron.WithDistributedJobLocker.
func NewLocker(locks *core.Locks, opts ...LockerOption) (*Locker, error) {
	if locks == nil {
		return nil, fmt.Errorf("gocronguard: %w: nil *core.Locks", core.ErrInvalidArgument)
	}
	l := &Locker{locks: locks, minHold: DefaultMinHold}
	for _, o := range opts {
		if o != nil {
			o(l)
		}
	}
	if l.ttl != 0 {
		if err := core.ValidateTTL(l.ttl); err != nil {
			return nil, fmt.Errorf("gocronguard: %w", err)
		}
	}
	if l.minHold < 0 {
		return nil, fmt.Errorf("gocronguard: %w: negative WithMinHold %v", core.ErrInvalidArgument, l.minHold)
	}
	return l, nil
}

// Lock takes the lock of the job named key, for one run. It fails, and
// gocron skips the run, with an error matching [core.ErrNotAcquired] when
// another instance holds it. The lock is renewed until gocron calls Unlock;
// it is not released when ctx (the job's context in gocron) ends, so a run
// still going at shutdown keeps others out until it returns or
// [core.Locks.Close] releases it.
func (l *Locker) Lock(ctx context.Context, key string) (gocron.Lock, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var opts []core.AcquireOption
	if l.ttl != 0 {
		opts = append(opts, core.WithTTL(l.ttl))
	}
	lk, err := l.locks.Acquire(context.WithoutCancel(ctx), l.prefix+key, opts...)
	if err != nil {
		return nil, fmt.Errorf("gocronguard: %w", err)
	}
	return &runLock{lk: lk, holdUntil: time.Now().Add(l.minHold)}, nil
}

type runLock struct {
	lk        *core.Lock
	holdUntil time.Time
}

// Unlock releases the lock, at once if the run began at least MinHold ago,
// else when MinHold has passed (Unlock itself returns at once). It returns
// the [*core.LockLostError] if the lock was lost during the run: another
// instance may have run the job meanwhile.
func (r *runLock) Unlock(ctx context.Context) error {
	if d := time.Until(r.holdUntil); d > 0 {
		var lost *core.LockLostError
		if errors.As(context.Cause(r.lk.Context()), &lost) {
			return lost
		}
		time.AfterFunc(d, func() { _ = r.lk.Release(context.Background()) })
		return nil
	}
	return r.lk.Release(ctx)
}

// ErrNotLeader is what [Elector.IsLeader] returns on an instance that does
// not lead: gocron then skips the run.
var ErrNotLeader = errors.New("gocronguard: this instance is not the leader")

// Elector is a gocron.Elector backed by a [core.Election]. Create it with
// [NewElector].
type Elector struct {
	election *core.Election
}

var _ gocron.Elector = (*Elector)(nil)

// NewElector makes this instance a candidate for the leadership of key (see
// [core.Locks.Elect]) and returns the gocron.Elector that lets jobs run only
// while it leads, for gocron.WithDistributedElector. c's callbacks are
// optional here: OnAcquired may be nil. Candidates campaign every c.TTL/3
// (the [core.Locks] default ttl when c.TTL is zero).
func NewElector(locks *core.Locks, key string, c core.Campaign) (*Elector, error) {
	if locks == nil {
		return nil, fmt.Errorf("gocronguard: %w: nil *core.Locks", core.ErrInvalidArgument)
	}
	if c.OnAcquired == nil {
		c.OnAcquired = func(*core.Lock) error { return nil }
	}
	e, err := locks.Elect(key, c)
	if err != nil {
		return nil, fmt.Errorf("gocronguard: %w", err)
	}
	return &Elector{election: e}, nil
}

// IsLeader returns nil while this instance leads, else [ErrNotLeader].
func (e *Elector) IsLeader(context.Context) error {
	if e.election.Leader() {
		return nil
	}
	return fmt.Errorf("%w (election %q)", ErrNotLeader, e.election.Key())
}

// Election returns the underlying election.
func (e *Elector) Election() *core.Election { return e.election }

// Stop ends the candidacy and, if this instance leads, steps down, so
// another instance leads at its next campaign. [core.Locks.Close] does the
// same.
func (e *Elector) Stop(ctx context.Context) error { return e.election.Stop(ctx) }
