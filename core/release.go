package core

import (
	"context"
	"fmt"
	"time"
)

// releaseTimeout bounds a release whose caller gave a context that is
// already done: the lock is still released, within this time.
const releaseTimeout = 10 * time.Second

// MinHold is how long the lock that guards a job stays taken, from the
// start of a run, when it is handed back sooner. Schedulers on several
// instances fire the same tick a little apart; an instance that fires up to
// MinHold late finds the key still taken and skips the tick instead of
// running it a second time. [Locks.Close] hands job leases back this way;
// an adapter for a scheduler that takes a lock per run (gocronguard) does
// it with [Lock.HandBack].
const MinHold = time.Second

// Release gives the lock back and ends its context. It does so even when
// ctx is already done (within a bounded time), so a deferred Release on a
// cancelled request still frees the key. Releasing twice is a no-op. It
// returns the [*LockLostError] if the lock was lost before it was released,
// because the work it protected may not have been alone. If the store
// call fails, Release returns its error, and the instance goes on
// releasing the key in the background, every 50ms until the store answers
// (for a minute, or the ttl if longer; not after [Locks.Close]), so that
// the key is not left held by nobody until its ttl.
//
// A nil lock or a nil ctx is an error matching [ErrInvalidArgument].
func (lk *Lock) Release(ctx context.Context) error {
	if err := lk.validEnd(ctx); err != nil {
		return err
	}
	return lk.locks.keeper.release(ctx, lk, 0)
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
	if err := lk.validEnd(ctx); err != nil {
		return err
	}
	return lk.locks.keeper.release(ctx, lk, lk.holdLeft(lk.acquired, hold))
}

// validEnd refuses to end a nil lock, or with a nil ctx.
func (lk *Lock) validEnd(ctx context.Context) error {
	if lk == nil || lk.locks == nil {
		return fmt.Errorf("%w: nil *Lock", ErrInvalidArgument)
	}
	return ValidateContext(ctx)
}

// release ends lk, released, and tells the store. With after > 0 it hands
// the lock back: it leaves the key taken in the store for after more, on
// the store's clock, by renewing it for that long instead of releasing it;
// nobody takes the key before then, and nobody here waits for it.
func (k *keeper) release(ctx context.Context, lk *Lock, after time.Duration) error {
	hooks, renewing, lost, ok := lk.lease.release()
	if !ok {
		return lost
	}
	lk.unwatch()
	lk.cancel(ErrReleased)
	k.drop(lk)
	runHooks(hooks, ErrReleased)

	// The release goes on if ctx ends meanwhile (a ctx that can never end
	// needs no detaching), within releaseTimeout.
	rctx := ctx
	if ctx.Done() != nil {
		rctx = context.WithoutCancel(ctx)
	}
	rctx, cancel := context.WithTimeout(rctx, releaseTimeout)
	defer cancel()
	l := k.l
	op := Op{Type: OpRelease, Key: lk.key, Kind: lk.kind}
	if after > 0 {
		// A hand-back keeps the key for the rest of its hold: a renewal
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
	rctx, end := l.observe(rctx, op)
	var err error
	if after > 0 {
		ok, err = l.store.Renew(rctx, lk.key, lk.owner, after)
	} else {
		ok, err = l.store.Release(rctx, lk.key, lk.owner)
	}
	end(ok, err)
	if err != nil {
		if after == 0 {
			// The release may not have reached the store, and the key
			// would stay held by nobody until its ttl: release it again
			// in the background until the store answers (not past Close).
			go l.keepReleasing(lk.key, lk.owner, lk.kind, time.Time{}, l.clock.Now().Add(max(lk.ttl, unknownRetryWindow)), false)
		}
		err = fmt.Errorf("leasehold: release %q: %w", lk.key, err)
		lk.endHold(false, err)
		return err
	}
	if !ok {
		// The store no longer had it: it expired there before this holder
		// noticed, so another holder may have run alongside.
		lost := &LockLostError{Key: lk.key, Token: lk.token, Reason: LostRefused}
		l.reportLost(lost)
		lk.endHold(false, lost)
		return lost
	}
	lk.endHold(true, nil)
	if after == 0 {
		// Waiters of this instance need no store to hear of it.
		l.waiting.wake(lk.key)
	}
	if l.debug() {
		l.log.Debug("leasehold: lock released", "key", lk.key, "token", lk.token)
	}
	return nil
}
