package core

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// SkipReason says why a job tick did not run.
type SkipReason int

const (
	// SkipOtherInstance: another instance holds the job's lease (on one instance).
	SkipOtherInstance SkipReason = iota + 1
	// SkipRunInProgress: a run of the job is still going, here or elsewhere
	// (without overlapping).
	SkipRunInProgress
	// SkipShuttingDown: this instance is closing and takes no new ticks.
	SkipShuttingDown
)

// String says why the tick was skipped, as the debug log does.
func (r SkipReason) String() string {
	switch r {
	case SkipOtherInstance:
		return "it runs on another instance"
	case SkipRunInProgress:
		return "a run is still in progress"
	case SkipShuttingDown:
		return "this instance is shutting down"
	}
	return fmt.Sprintf("SkipReason(%d)", int(r))
}

// SkippedError is what [Job.Run] returns for a tick that did not run.
type SkippedError struct {
	Key    string
	Reason SkipReason
}

// Error names the job and why its tick was skipped.
func (e *SkippedError) Error() string {
	return fmt.Sprintf("leasehold: job %q skipped: %s", e.Key, e.Reason)
}

// Is makes every SkippedError match [ErrSkipped].
func (e *SkippedError) Is(target error) bool { return target == ErrSkipped }

// JobOption configures a job in [Locks.Job].
type JobOption func(*Job)

// WithJobKey sets the job's key, at most [MaxJobKeyLength] characters. Set
// it on every job that must never run twice: the default, the function's
// name, changes when the code is renamed, and during a rolling deploy old
// and new instances would then guard the same job under two keys and both
// run it.
func WithJobKey(key string) JobOption { return func(j *Job) { j.key, j.keySet = key, true } }

// leaseSuffix makes a job's lease key from its key: "<key>:owner".
const leaseSuffix = ":owner"

// MaxJobKeyLength is the longest job key, in characters (runes): a job's
// lease is the lock "<key>:owner", which must fit in [MaxKeyLength].
const MaxJobKeyLength = MaxKeyLength - len(leaseSuffix)

// validateJobKey reports why key cannot be a job's key, naming the key as
// the user gave it (set says it came from WithJobKey, not the function's name).
func validateJobKey(key string, set bool) error {
	from := fmt.Sprintf("job key %q", key)
	if set {
		from = fmt.Sprintf("WithJobKey(%q)", key)
	}
	switch n := utf8.RuneCountInString(key); {
	case key == "":
		return fmt.Errorf("%w: %s is empty: give the job a key that stays the same across deploys", ErrInvalidKey, from)
	case n > MaxJobKeyLength:
		return fmt.Errorf("%w: %s is %d characters, more than %d: the job's lease is the lock %q, and a lock key is at most %d characters",
			ErrInvalidKey, from, n, MaxJobKeyLength, "<key>"+leaseSuffix, MaxKeyLength)
	}
	if err := ValidateKey(key); err != nil {
		return layer(err, "job")
	}
	return nil
}

// OnOneInstance runs the job on one instance only. The first instance whose
// tick fires takes the job's lease (the lock "<key>:owner") and keeps it,
// renewed, for as long as it is up: it runs this tick and every later one,
// and other instances skip theirs. When the owner dies, its lease expires
// after ttl and the first tick after that, anywhere, takes it; when it shuts
// down cleanly, it hands the lease back and the next tick anywhere takes it.
func OnOneInstance() JobOption { return func(j *Job) { j.oneInstance = true } }

// WithoutOverlapping keeps a run from starting while another run of the job
// is in progress, on this instance or any other: each run takes the run lock
// "<key>", renewed for the whole run, released when the run's function
// returns (even if the run's context ended before). A crashed run's lock
// expires after ttl.
func WithoutOverlapping() JobOption { return func(j *Job) { j.noOverlap = true } }

// WithJobTTL sets the ttl of the job's lease and run lock, instead of the
// instance's default. A long run does not need a long ttl: its lock is
// renewed every ttl/3.
func WithJobTTL(ttl time.Duration) JobOption { return func(j *Job) { j.ttl = ttl } }

// Job is a function put under guards by [Locks.Job]. Call [Job.Func] from a
// scheduler, or [Job.Run] to run it by hand. Missed ticks are not caught up:
// a crashed owner costs up to ttl of ticks and ticks during a long run are
// skipped, so write jobs that do what is due, not what the tick was for.
type Job struct {
	locks       *Locks
	key         string
	keySet      bool // given with JobKey, possibly empty
	fn          func(ctx context.Context) error
	oneInstance bool
	noOverlap   bool
	ttl         time.Duration

	mu        sync.Mutex
	lease     *Lock
	lastStart time.Time
}

// Job puts fn under the guards chosen with [OnOneInstance] and
// [WithoutOverlapping] (at least one). Its key is given with [WithJobKey];
// without one it is fn's name, which a closure does not have, so a closure
// needs WithJobKey. A key that collides with another job's run lock or lease, or
// with an election, is refused with [ErrDuplicateKey].
func (l *Locks) Job(fn func(ctx context.Context) error, opts ...JobOption) (*Job, error) {
	if fn == nil {
		return nil, fmt.Errorf("%w: nil job function", ErrInvalidArgument)
	}
	j := &Job{locks: l, fn: fn, ttl: l.ttl}
	for i, o := range opts {
		if o == nil {
			return nil, fmt.Errorf("%w: job option %d is nil", ErrInvalidArgument, i)
		}
		o(j)
	}
	if !j.oneInstance && !j.noOverlap {
		return nil, fmt.Errorf("%w: a job needs OnOneInstance, WithoutOverlapping or both", ErrInvalidArgument)
	}
	if !j.keySet {
		name, ok := funcName(fn)
		if !ok {
			return nil, fmt.Errorf("%w: %s is an anonymous function and has no stable name: set WithJobKey", ErrInvalidArgument, name)
		}
		j.key = name
	}
	if err := validateJobKey(j.key, j.keySet); err != nil {
		return nil, err
	}
	if err := ValidateTTL(j.ttl); err != nil {
		return nil, layer(err, "job %q", j.key)
	}
	what := fmt.Sprintf("job %q", j.key)
	keys := map[string]string{j.key: "its run lock", j.leaseKey(): "its lease"}
	if err := l.guards.register(what, keys, func() { l.guards.jobs = append(l.guards.jobs, j) }); err != nil {
		return nil, err
	}
	return j, nil
}

// funcName returns the name of fn, and false when it is a closure.
func funcName(fn any) (string, bool) {
	name := runtime.FuncForPC(reflect.ValueOf(fn).Pointer()).Name()
	name = strings.TrimSuffix(name, "-fm") // method values
	// A closure is named after the functions around it: pkg.F.func1, and
	// when nested pkg.F.func1.2 or, inlined, pkg.F.func1.func3. Any such
	// element after the package path makes the name unstable.
	elems := strings.Split(name[strings.LastIndex(name, "/")+1:], ".")
	for _, e := range elems[1:] {
		if n := strings.TrimPrefix(e, "func"); n != "" && strings.Trim(n, "0123456789") == "" {
			return name, false
		}
	}
	return name, true
}

// Key returns the job's key.
func (j *Job) Key() string { return j.key }

func (j *Job) leaseKey() string { return j.key + leaseSuffix }

// Func returns the job as a plain func(), for any scheduler (robfig/cron's
// FuncJob, a time.Ticker loop). A skipped tick is logged at debug, a failed
// run at error, and a panic in the job is recovered and logged at error.
func (j *Job) Func() func() {
	return func() {
		log := j.locks.log
		defer func() {
			if r := recover(); r != nil {
				log.Error("leasehold: job panicked", "key", j.key, "panic", r)
			}
		}()
		err := j.Run(context.Background())
		if err != nil && !errors.Is(err, ErrSkipped) {
			log.Error("leasehold: job failed", "key", j.key, "err", err)
		}
	}
}

// Run runs one tick of the job under its guards and reports what happened:
// nil when the job ran and returned nil; a [*SkippedError] when the tick did
// not run; otherwise the job's error, or the [*LockLostError] of a lock lost
// during the run. The run's context ends when ctx ends, when the run lock or
// the lease is lost, or when shutdown stops waiting; [LockFromContext] gives
// the run lock (or, without WithoutOverlapping, the lease) and its fencing
// token. A panic in the job releases the run lock and goes on.
func (j *Job) Run(ctx context.Context) error {
	if err := ValidateContext(ctx); err != nil {
		return err
	}
	return j.locks.observed(ctx, Op{Type: OpJobRun, Key: j.key}, j.run)
}

// run is Run, observed; it sets ran when it calls the job's function.
func (j *Job) run(ctx context.Context, ran *bool) error {
	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	done, ok := j.locks.guards.startRun(cancel)
	if !ok {
		return j.skip(SkipShuttingDown)
	}
	defer done()
	if err := ctx.Err(); err != nil {
		return err
	}

	var lease *Lock
	if j.oneInstance {
		var err error
		// Without ctx's cancellation (the lease outlives this tick), with
		// its values (an observer's span).
		if lease, err = j.ownLease(context.WithoutCancel(ctx)); err != nil {
			return err
		}
		defer context.AfterFunc(lease.Context(), func() { cancel(context.Cause(lease.Context())) })()
		runCtx = context.WithValue(runCtx, lockKey{}, lease)
	}

	if !j.noOverlap {
		j.started()
		j.logRun(lease)
		*ran = true
		return withLost(j.fn(runCtx), lease)
	}
	// The run lock lives until fn returns, not until runCtx ends: when the
	// caller's ctx ends, the lease is lost or shutdown stops waiting, fn is
	// cancelled, but no other run may start while it is still winding down.
	lk, err := j.locks.Acquire(context.WithoutCancel(runCtx), j.key, WithTTL(j.ttl), asKind(KindRunLock))
	switch {
	case errors.Is(err, ErrNotAcquired):
		return j.skip(SkipRunInProgress)
	case errors.Is(err, ErrClosed):
		return j.skip(SkipShuttingDown)
	case err != nil:
		return layer(err, "job %q run lock", j.key)
	}
	lk.whenEnded(func(cause error) { cancel(cause) })
	runCtx = context.WithValue(runCtx, lockKey{}, lk)
	j.started()
	j.logRun(lk)
	*ran = true
	return withLost(lk.run(func(context.Context) error { return j.fn(runCtx) }), lease)
}

// withLost adds to a run's err the *LockLostError of the lease, if the lease
// was lost: the run may not have been alone.
func withLost(err error, lease *Lock) error {
	if lost := lease.lostError(); lost != nil {
		return errors.Join(err, lost)
	}
	return err
}

func (j *Job) skip(reason SkipReason) error {
	j.locks.log.Debug("leasehold: job tick skipped", "key", j.key, "reason", reason.String())
	return &SkippedError{Key: j.key, Reason: reason}
}

func (j *Job) started() {
	now := j.locks.clock.Now()
	j.mu.Lock()
	j.lastStart = now
	j.mu.Unlock()
}

// ownLease returns this instance's lease on the job, taking it if it is free.
func (j *Job) ownLease(ctx context.Context) (*Lock, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.lease != nil && j.lease.Context().Err() == nil {
		if j.lease.Held() {
			return j.lease, nil
		}
		// A renewal is overdue (this process was paused): until the
		// keeper learns whether the store kept it, do not run.
		return nil, j.skip(SkipOtherInstance)
	}
	lk, err := j.locks.Acquire(ctx, j.leaseKey(), WithTTL(j.ttl), asKind(KindJobLease))
	switch {
	case errors.Is(err, ErrNotAcquired):
		return nil, j.skip(SkipOtherInstance)
	case errors.Is(err, ErrClosed):
		// Close began after this run was counted in.
		return nil, j.skip(SkipShuttingDown)
	case err != nil:
		return nil, layer(err, "job %q lease", j.key)
	}
	j.lease = lk
	j.locks.log.Info("leasehold: job lease taken; this instance runs the job", "key", j.key, j.leaseTokenName(), lk.Token())
	return lk, nil
}

// handBack releases the job's lease at shutdown. A lease whose run started
// less than [MinHold] ago stays taken in the store for the rest of it, so
// instances firing the same tick a little later skip it instead of running
// it again. The store keeps it (renewed for that rest, on the store's clock)
// rather than this instance waiting: Close never waits on the instance's
// clock, which a test's ManualClock may never move.
func (j *Job) handBack(ctx context.Context) error {
	j.mu.Lock()
	lease, start := j.lease, j.lastStart
	j.lease = nil
	j.mu.Unlock()
	if lease == nil || lease.Context().Err() != nil {
		return nil
	}
	rest := lease.holdLeft(start, MinHold)
	err := j.locks.keeper.release(ctx, lease, rest)
	attrs := []any{"key", j.key, j.leaseTokenName(), lease.Token()}
	if rest > 0 {
		attrs = append(attrs, "expires_in", rest)
	}
	j.locks.log.Info("leasehold: job lease handed back", attrs...)
	var lost *LockLostError
	if errors.As(err, &lost) {
		return nil
	}
	return err
}

// logRun logs, at debug, that a run starts, with the token of fence, the
// lock that [LockFromContext] gives the run: the run lock with
// WithoutOverlapping, otherwise the lease. See [Job.FencesWith].
func (j *Job) logRun(fence *Lock) {
	if j.locks.debug() {
		j.locks.log.Debug("leasehold: job run started", "key", j.key, "token", fence.Token(), "fenced_by", j.FencesWith().String())
	}
}

// leaseTokenName is the name of the lease's token in the job's log lines:
// "token" when the lease is the lock a run fences with (the job has no run
// lock), "lease_token" otherwise, so that "token" in a job's lines always
// means the token its runs fence with.
func (j *Job) leaseTokenName() string {
	if j.FencesWith() == KindJobLease {
		return "token"
	}
	return "lease_token"
}

// FencesWith says which of the job's locks a run fences its writes with,
// the one [LockFromContext] gives the run: [KindRunLock] when the job has
// [WithoutOverlapping] (a new, higher token for every run, wherever it
// runs), otherwise [KindJobLease] (one token for as long as this instance
// owns the job). The job's log lines name that lock's token "token"; the
// lease's token, when runs fence with the run lock, is "lease_token".
func (j *Job) FencesWith() LockKind {
	if j.noOverlap {
		return KindRunLock
	}
	return KindJobLease
}
