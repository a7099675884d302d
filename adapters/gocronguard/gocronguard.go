// Package gocronguard lets several instances of a service share one
// gocron (github.com/go-co-op/gocron/v2) schedule, through leasehold.
//
// gocron offers two ways to run a schedule on many instances, and this
// package implements both on a [core.Locks]:
//
//   - [Locker], for gocron.WithDistributedLocker: every instance fires every
//     tick; the first to take the job's lock runs it, the others skip it. The
//     key stays taken for the run and at least a minimum hold after it began
//     (nine tenths of the job's interval with [Locker.ReadSchedules], else
//     [core.MinHold]; see [WithMinHold]), so that instances whose ticks fire
//     the same run a little later skip it too. A task made with [Locker.Task] runs in the
//     run lock's context, with its fencing token.
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
	"reflect"
	"sync"
	"time"

	"github.com/go-co-op/gocron/v2"
	"github.com/leasehold/leasehold/core"
)

// Locker is a gocron.Locker that takes a leasehold lock for each run of a
// job. Create it with [NewLocker].
type Locker struct {
	locks      *core.Locks
	prefix     string
	ttl        time.Duration
	minHold    time.Duration
	minHoldSet bool // WithMinHold was given: no hold from the schedule

	mu sync.Mutex
	// sched is the scheduler whose jobs' schedules set their holds (see
	// ReadSchedules), and holds the hold derived for each job name.
	sched gocron.Scheduler
	holds map[string]time.Duration
	// runs holds the lock of each run in progress, by gocron's context of
	// the job, which gocron passes both to Lock and to the job's task.
	runs map[context.Context]*core.Lock
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

// WithMinHold sets how long, from the start of a run, the key stays taken
// even if the run ends sooner, counted on the [core.Locks] instance's
// clock, for every job. Without it, a job's hold is [HoldShare] of its
// interval when the Locker reads the job's schedule ([Locker.ReadSchedules]),
// else [core.MinHold] (one second). Pick it above the spread between the
// instances' ticks and below the job's interval; 0 releases the lock as
// soon as the run ends, which lets an instance that fires late run the same
// tick again.
func WithMinHold(d time.Duration) LockerOption {
	return func(l *Locker) { l.minHold, l.minHoldSet = d, true }
}

// HoldShare is the share of a job's interval (the time between its next two
// runs) for which a run's key stays taken from the run's start, when the
// Locker reads the job's schedule: 9/10. The instances' ticks of one run
// may then fire up to nine tenths of the interval apart (instances started
// at different moments, with a gocron.DurationJob, fire at different
// phases; gocron.CronJob instances fire within their clocks' skew) and the
// run still happens once; the instance's own next tick finds the key free
// as long as it fires less than a tenth of the interval late.
const HoldShare = 0.9

// ReadSchedules tells the Locker the scheduler it locks runs for, so that
// each job's minimum hold follows its schedule: [HoldShare] of the time
// between the job's next two runs, read once per job name at its first
// run. A per-second job then holds its key for 900ms, not the one second
// of [core.MinHold] that made every other tick find the key still taken.
// Call it once the scheduler exists (it takes the Locker as an option):
//
//	locker, err := gocronguard.NewLocker(locks)
//	s, err := gocron.NewScheduler(gocron.WithDistributedLocker(locker))
//	locker.ReadSchedules(s)
//
// [WithMinHold] overrides it.
func (l *Locker) ReadSchedules(s gocron.Scheduler) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sched = s
	l.holds = make(map[string]time.Duration)
}

// holdOf returns the minimum hold of a run of the job named name.
func (l *Locker) holdOf(name string) time.Duration {
	l.mu.Lock()
	sched, h, known := l.sched, time.Duration(0), false
	if l.holds != nil {
		h, known = l.holds[name]
	}
	l.mu.Unlock()
	if l.minHoldSet || sched == nil {
		return l.minHold
	}
	if known {
		return h
	}
	for _, j := range sched.Jobs() {
		if j.Name() != name {
			continue
		}
		runs, err := j.NextRuns(2)
		if err != nil || len(runs) < 2 || !runs[1].After(runs[0]) {
			return l.minHold // not readable now: try again at the next run
		}
		h = time.Duration(float64(runs[1].Sub(runs[0])) * HoldShare)
		l.mu.Lock()
		l.holds[name] = h
		l.mu.Unlock()
		return h
	}
	return l.minHold
}

// NewLocker returns a gocron.Locker on locks, for
// gocron.WithDistributedLocker or gocron.WithDistributedJobLocker.
func NewLocker(locks *core.Locks, opts ...LockerOption) (*Locker, error) {
	if locks == nil {
		return nil, fmt.Errorf("gocronguard: %w: nil *core.Locks", core.ErrInvalidArgument)
	}
	l := &Locker{locks: locks, minHold: core.MinHold, runs: make(map[context.Context]*core.Lock)}
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
	if keyable(ctx) {
		l.mu.Lock()
		l.runs[ctx] = lk
		l.mu.Unlock()
	}
	return &runLock{locker: l, job: ctx, lk: lk, hold: l.holdOf(key)}, nil
}

// keyable reports whether ctx can key a map: gocron's job contexts
// always can.
func keyable(ctx context.Context) bool { return reflect.TypeOf(ctx).Comparable() }

type runLock struct {
	locker *Locker
	job    context.Context // gocron's context of the job, which Lock was given
	lk     *core.Lock
	hold   time.Duration // the minimum hold, from the run's start
}

// Unlock hands the lock back with [core.Lock.HandBack]: released at once
// if the run began at least the minimum hold ago, else left taken in the
// store for the rest of it. Either way Unlock returns after one store call.
// It returns the [*core.LockLostError] if the lock was lost during the run:
// another instance may have run the job meanwhile.
func (r *runLock) Unlock(ctx context.Context) error {
	l := r.locker
	if keyable(r.job) {
		l.mu.Lock()
		if l.runs[r.job] == r.lk {
			delete(l.runs, r.job)
		}
		l.mu.Unlock()
	}
	return r.lk.HandBack(ctx, r.hold)
}

// ErrNoRunLock is what a task made by [Locker.Task] returns, without
// running its function, when its run holds no lock of the Locker: the job
// is not locked by this Locker (gocron.WithDisabledDistributedJobLocker,
// another locker), so its run is not guarded.
var ErrNoRunLock = errors.New("gocronguard: the run holds no lock of this Locker")

// Task returns a gocron task that runs fn under the lock this Locker took
// for the run. fn's context is the lock's: [core.LockFromContext] returns
// the lock, whose Token is the fencing token to pass with every write the
// run makes, and the context ends when the lock is lost or when gocron's
// context of the job ends (at shutdown), with that as its cause. A run
// whose lock this Locker did not take fails with [ErrNoRunLock], and fn
// does not run.
//
//	s.NewJob(gocron.DurationJob(time.Minute), locker.Task(func(ctx context.Context) error {
//		return export(ctx, core.LockFromContext(ctx).Token())
//	}), gocron.WithName("billing:export"))
func (l *Locker) Task(fn func(ctx context.Context) error) gocron.Task {
	return gocron.NewTask(func(job context.Context) error {
		if fn == nil {
			return fmt.Errorf("gocronguard: %w: nil task function", core.ErrInvalidArgument)
		}
		var lk *core.Lock
		if keyable(job) {
			l.mu.Lock()
			lk = l.runs[job]
			l.mu.Unlock()
		}
		if lk == nil {
			return ErrNoRunLock
		}
		ctx, cancel := context.WithCancelCause(lk.Context())
		defer cancel(nil)
		defer context.AfterFunc(job, func() { cancel(context.Cause(job)) })()
		return fn(ctx)
	})
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
