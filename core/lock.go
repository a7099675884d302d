package core

import (
	"context"
	"errors"
	"fmt"
	"time"
)

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

	// lease is the lock's state and its transitions (lease.go).
	lease lease

	// Owned by the keeper, under its mutex: when it next looks at the
	// lock, and the lock's place in its heap.
	next      time.Time
	heapIndex int
}

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
	lk := &Lock{locks: l, key: key, owner: owner, token: token, ttl: cfg.ttl, kind: cfg.kind, acquired: sent, endHold: endHold, heapIndex: -1}
	lk.lease.deadline = holderDeadline(sent, cfg.ttl)
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
	if lk == nil || lk.ctx == nil || lk.ctx.Err() != nil {
		// Released, lost, or the context given to Acquire ended (the
		// release it triggers may still be on its way).
		return false
	}
	return lk.lease.trusted(lk.locks.clock.Now())
}

// unwatch detaches the release that runs when Acquire's ctx ends.
func (lk *Lock) unwatch() {
	if lk.stopWatch != nil {
		lk.stopWatch()
	}
}

// whenEnded calls fn, synchronously, when the lock is released (cause
// ErrReleased) or lost (cause the *LockLostError); at once if it already is.
// Unlike context.AfterFunc it runs in the goroutine that ended the lock, so
// on a ManualClock a loss and its consequences happen within Advance.
func (lk *Lock) whenEnded(fn func(cause error)) {
	if cause, held := lk.lease.whenEnded(fn); !held {
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
	return lk.lease.lostError()
}
