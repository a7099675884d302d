package core

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// releaseTimeout bounds a release whose caller gave a context that is
// already done: the lock is still handed back, within this time.
const releaseTimeout = 10 * time.Second

// MinHold is how long the lock that guards a job stays taken, from the
// start of a run, when it is handed back sooner. Schedulers on several
// instances fire the same tick a little apart; an instance that fires up to
// MinHold late finds the key still taken and skips the tick instead of
// running it a second time. [Locks.Close] hands job leases back this way;
// an adapter for a scheduler that takes a lock per run (gocronguard) does
// it with [Lock.HandBack].
const MinHold = time.Second

// Lock is a held lease on a key, taken with [Locks.Acquire]. While it is
// held, the [Locks] instance renews it every ttl/3. Its [Lock.Context] ends
// when the lock is released or lost; after a loss, [context.Cause] of it is
// a [*LockLostError].
type Lock struct {
	locks *Locks
	key   string
	owner string
	token int64
	ttl   time.Duration
	kind  LockKind
	// acquired is when the acquiring call was sent, on the Locks clock.
	acquired time.Time

	// endHold ends the observer's OpHold, once: when the lock is released
	// or lost.
	endHold func(ok bool, err error)

	ctx    context.Context
	cancel context.CancelCauseFunc
	// value is the parent of ctx: Acquire's context, with the lock as a
	// value, held here so that it costs no allocation of its own.
	value lockValue
	// stopWatch detaches the release that runs when Acquire's ctx ends;
	// nil when that ctx can never end.
	stopWatch func() bool

	mu       sync.Mutex
	state    lockState
	deadline time.Time // see holderDeadline
	// renewing is closed when the renewal in flight returns; nil when none is.
	renewing chan struct{}
	lastErr  error // the last failed renewal's error
	lostErr  *LockLostError
	onEnd    []func(cause error)

	// Owned by the scheduler, under its mutex.
	due       time.Time
	heapIndex int
}

type lockState int

const (
	stateHeld lockState = iota
	stateReleased
	stateLost
)

type lockKey struct{}

// lockValue is a context with a lock as the value of lockKey, as
// context.WithValue would make it.
type lockValue struct {
	context.Context
	lk *Lock
}

func (v *lockValue) Value(key any) any {
	if key == (lockKey{}) {
		return v.lk
	}
	return v.Context.Value(key)
}

func (v *lockValue) String() string {
	return fmt.Sprintf("%v.WithValue(leasehold lock %q)", v.Context, v.lk.key)
}

// LockFromContext returns the lock whose context ctx is or derives from: the
// lock of a [Locks.WithLock] callback, of a job run, or of a leadership. It
// returns nil outside one.
func LockFromContext(ctx context.Context) *Lock {
	lk, _ := ctx.Value(lockKey{}).(*Lock)
	return lk
}

func newLock(l *Locks, parent context.Context, key, owner string, token int64, cfg acquireConfig, sent time.Time, endHold func(bool, error)) *Lock {
	lk := &Lock{locks: l, key: key, owner: owner, token: token, ttl: cfg.ttl, kind: cfg.kind, acquired: sent, endHold: endHold, deadline: holderDeadline(sent, cfg.ttl), heapIndex: -1}
	lk.value = lockValue{parent, lk}
	lk.ctx, lk.cancel = context.WithCancelCause(&lk.value)
	if parent.Done() != nil { // else it never ends: nothing to watch
		lk.stopWatch = context.AfterFunc(parent, func() {
			_ = lk.Release(context.WithoutCancel(parent))
		})
	}
	return lk
}

// Key returns the key the lock holds.
func (lk *Lock) Key() string { return lk.key }

// Owner returns the owner id the store knows this holder by.
func (lk *Lock) Owner() string { return lk.owner }

// Token returns the acquisition's fencing token. Pass it with every write the
// lock protects, to a resource that refuses a token lower than the highest it
// has seen: a holder that paused past its lease then cannot overwrite the
// work of the next holder.
func (lk *Lock) Token() int64 { return lk.token }

// TTL returns the lock's ttl.
func (lk *Lock) TTL() time.Duration { return lk.ttl }

// Context returns a context that ends when the lock is released or lost, or
// when the context given to Acquire ends. [LockFromContext] returns the lock
// from it.
func (lk *Lock) Context() context.Context { return lk.ctx }

// Done is shorthand for lk.Context().Done().
func (lk *Lock) Done() <-chan struct{} { return lk.ctx.Done() }

// Held reports whether the holder can still be sure it holds the lock: it has
// been neither released nor lost, and ttl minus [SafetyMargin] has not passed
// since the last renewal the store confirmed was sent.
func (lk *Lock) Held() bool {
	if lk.ctx.Err() != nil {
		// Released, lost, or the context given to Acquire ended (the
		// release it triggers may still be on its way).
		return false
	}
	now := lk.locks.clock.Now()
	lk.mu.Lock()
	defer lk.mu.Unlock()
	return lk.state == stateHeld && now.Before(lk.deadline)
}

// Release hands the lock back and ends its context. It does so even when ctx
// is already done (within a bounded time), so a deferred Release on a
// cancelled request still frees the key. Releasing twice is a no-op. It
// returns the [*LockLostError] if the lock was lost before it was released,
// because the work it protected may not have been alone.
func (lk *Lock) Release(ctx context.Context) error { return lk.releaseAfter(ctx, 0) }

// releaseAfter ends the lock like Release. With after > 0 it leaves the key
// taken in the store for after more, on the store's clock, by renewing it
// for that long instead of releasing it: nobody takes the key before then,
// and nobody here waits for it.
func (lk *Lock) releaseAfter(ctx context.Context, after time.Duration) error {
	lk.mu.Lock()
	switch lk.state {
	case stateReleased:
		lk.mu.Unlock()
		return nil
	case stateLost:
		lk.mu.Unlock()
		return lk.lostErr
	}
	lk.state = stateReleased
	hooks := lk.takeHooksLocked()
	renewing := lk.renewing
	lk.mu.Unlock()

	lk.unwatch()
	lk.cancel(ErrReleased)
	lk.locks.forget(lk)
	runHooks(hooks, ErrReleased)

	// The release goes on if ctx ends meanwhile (a ctx that can never end
	// needs no detaching), within releaseTimeout.
	rctx := ctx
	if ctx.Done() != nil {
		rctx = context.WithoutCancel(ctx)
	}
	rctx, cancel := context.WithTimeout(rctx, releaseTimeout)
	defer cancel()
	op := Op{Type: OpRelease, Key: lk.key, Kind: lk.kind}
	if after > 0 {
		// A handback keeps the key for the rest of its hold: a renewal
		// for after. A renewal still in flight would move the expiry back
		// to ttl from now if it reached the store after this call: let it
		// land first. (A Release needs no such care: the late renewal
		// finds no owner.)
		op.Type = OpRenew
		if renewing != nil {
			select {
			case <-renewing:
			case <-rctx.Done():
			}
		}
	}
	rctx, end := lk.locks.observe(rctx, op)
	var ok bool
	var err error
	if after > 0 {
		ok, err = lk.locks.store.Renew(rctx, lk.key, lk.owner, after)
	} else {
		ok, err = lk.locks.store.Release(rctx, lk.key, lk.owner)
	}
	end(ok, err)
	if err != nil {
		err = fmt.Errorf("leasehold: release %q: %w", lk.key, err)
		lk.endHold(false, err)
		return err
	}
	if !ok {
		// The store no longer had it: it expired there before this holder
		// noticed, so another holder may have run alongside.
		lost := &LockLostError{Key: lk.key, Token: lk.token, Reason: LostRefused}
		lk.locks.reportLost(lost)
		lk.endHold(false, lost)
		return lost
	}
	lk.endHold(true, nil)
	if lk.locks.debug() {
		lk.locks.log.Debug("leasehold: lock released", "key", lk.key, "token", lk.token)
	}
	return nil
}

// unwatch detaches the release that runs when Acquire's ctx ends.
func (lk *Lock) unwatch() {
	if lk.stopWatch != nil {
		lk.stopWatch()
	}
}

// lose marks the lock lost and tells everyone who should know.
func (lk *Lock) lose(reason LossReason) {
	lk.mu.Lock()
	if lk.state != stateHeld {
		lk.mu.Unlock()
		return
	}
	lk.state = stateLost
	lk.lostErr = &LockLostError{Key: lk.key, Token: lk.token, Reason: reason, Err: lk.lastErr}
	hooks := lk.takeHooksLocked()
	lk.mu.Unlock()

	lk.unwatch()
	lk.cancel(lk.lostErr)
	lk.locks.forget(lk)
	lk.locks.reportLost(lk.lostErr)
	lk.endHold(false, lk.lostErr)
	runHooks(hooks, lk.lostErr)
}

// whenEnded calls fn, synchronously, when the lock is released (cause
// ErrReleased) or lost (cause the *LockLostError); at once if it already is.
// Unlike context.AfterFunc it runs in the goroutine that ended the lock, so
// on a ManualClock a loss and its consequences happen within Advance.
func (lk *Lock) whenEnded(fn func(cause error)) {
	lk.mu.Lock()
	if lk.state == stateHeld {
		lk.onEnd = append(lk.onEnd, fn)
		lk.mu.Unlock()
		return
	}
	var cause error = ErrReleased
	if lk.state == stateLost {
		cause = lk.lostErr
	}
	lk.mu.Unlock()
	fn(cause)
}

func (lk *Lock) takeHooksLocked() []func(error) {
	hooks := lk.onEnd
	lk.onEnd = nil
	return hooks
}

func runHooks(hooks []func(error), cause error) {
	for _, fn := range hooks {
		fn(cause)
	}
}

// run calls fn under the lock and releases it after fn returns or panics.
func (lk *Lock) run(fn func(ctx context.Context) error) (err error) {
	defer func() {
		// Release even on a panic, which then goes on.
		relErr := lk.Release(context.WithoutCancel(lk.ctx))
		if err == nil {
			err = relErr
		} else if relErr != nil {
			err = errors.Join(err, relErr)
		}
	}()
	return fn(lk.ctx)
}

// HandBack ends the lock like [Lock.Release], except that the key stays
// taken in the store until hold has passed since the lock was acquired:
// instead of releasing it, HandBack renews it once for the rest of hold and
// stops renewing it, so the store frees it then, on the store's own clock.
// Nothing waits for that: HandBack returns after that one store call, on
// any clock. Once hold has passed, it is Release. Either way it returns
// what Release would, such as the [*LockLostError] of a lock lost before.
//
// Hand back with [MinHold] a lock taken for one run of a scheduled job, so
// that instances firing the same tick a little later skip it.
func (lk *Lock) HandBack(ctx context.Context, hold time.Duration) error {
	return lk.releaseAfter(ctx, lk.holdLeft(lk.acquired, hold))
}

// holdLeft is how much of hold, counted from start on the Locks clock, is
// left now, rounded up to a whole millisecond (a ttl's unit); 0 once it has
// passed.
func (lk *Lock) holdLeft(start time.Time, hold time.Duration) time.Duration {
	rest := min(start.Add(hold).Sub(lk.locks.clock.Now()), hold)
	if rest <= 0 {
		return 0
	}
	return (rest + time.Millisecond - 1).Truncate(time.Millisecond)
}

// lostError returns the lock's *LockLostError if it was lost, else nil. A
// nil lock has none.
func (lk *Lock) lostError() error {
	if lk == nil {
		return nil
	}
	lk.mu.Lock()
	defer lk.mu.Unlock()
	if lk.state == stateLost {
		return lk.lostErr
	}
	return nil
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
	ctx, cancel := renewalContext(l.sched.ctx, sent, deadline)
	ctx, end := l.observe(ctx, Op{Type: OpRenew, Key: lk.key, Kind: lk.kind})
	ok, err := l.store.Renew(ctx, lk.key, lk.owner, lk.ttl)
	end(ok, err)
	cancel()
	lk.afterRenewal(sent, deadline, ok, err)
}

// afterRenewal acts on the answer to a renewal of lk sent at sent, when
// its deadline was deadline: a confirmed renewal moves the deadline and
// schedules the next, a refusal loses the lock, a failure retries until
// the deadline. Single and batch renewals share it.
func (lk *Lock) afterRenewal(sent, deadline time.Time, ok bool, err error) {
	l := lk.locks
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
