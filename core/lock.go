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
	// acquired is when the acquiring call was sent, on the Locks clock.
	acquired time.Time

	ctx    context.Context
	cancel context.CancelCauseFunc
	// stopWatch detaches the release that runs when Acquire's ctx ends.
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

// LockFromContext returns the lock whose context ctx is or derives from: the
// lock of a [Locks.WithLock] callback, of a job run, or of a leadership. It
// returns nil outside one.
func LockFromContext(ctx context.Context) *Lock {
	lk, _ := ctx.Value(lockKey{}).(*Lock)
	return lk
}

func newLock(l *Locks, parent context.Context, key, owner string, token int64, ttl time.Duration, sent time.Time) *Lock {
	lk := &Lock{locks: l, key: key, owner: owner, token: token, ttl: ttl, acquired: sent, deadline: holderDeadline(sent, ttl), heapIndex: -1}
	lk.ctx, lk.cancel = context.WithCancelCause(context.WithValue(parent, lockKey{}, lk))
	lk.stopWatch = context.AfterFunc(parent, func() {
		_ = lk.Release(context.WithoutCancel(parent))
	})
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

	lk.stopWatch()
	lk.cancel(ErrReleased)
	lk.locks.forget(lk)
	runHooks(hooks, ErrReleased)

	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
	defer cancel()
	var ok bool
	var err error
	if after > 0 {
		// A renewal still in flight would move the expiry back to ttl from
		// now if it reached the store after this call: let it land first.
		// (A Release needs no such care: the late renewal finds no owner.)
		if renewing != nil {
			select {
			case <-renewing:
			case <-rctx.Done():
			}
		}
		ok, err = lk.locks.store.Renew(rctx, lk.key, lk.owner, after)
	} else {
		ok, err = lk.locks.store.Release(rctx, lk.key, lk.owner)
	}
	if err != nil {
		return fmt.Errorf("leasehold: release %q: %w", lk.key, err)
	}
	if !ok {
		// The store no longer had it: it expired there before this holder
		// noticed, so another holder may have run alongside.
		lost := &LockLostError{Key: lk.key, Token: lk.token, Reason: LostRefused}
		lk.locks.reportLost(lost)
		return lost
	}
	lk.locks.log.Debug("leasehold: lock released", "key", lk.key, "token", lk.token)
	return nil
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

	lk.stopWatch()
	lk.cancel(lk.lostErr)
	lk.locks.forget(lk)
	lk.locks.reportLost(lk.lostErr)
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

func (l *Locks) reportLost(err *LockLostError) {
	attrs := []any{"key", err.Key, "token", err.Token, "reason", err.Reason.String()}
	if err.Err != nil {
		attrs = append(attrs, "err", err.Err)
	}
	l.log.Warn("leasehold: lock lost; another holder may take it now", attrs...)
	l.emit(Event{Type: EventLockLost, Key: err.Key, Token: err.Token, Err: err})
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
