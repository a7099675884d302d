package core

import (
	"context"
	"time"
)

// MinHold is how long the lock that guards a job stays taken, from the
// start of a run, when it is handed back sooner. Schedulers on several
// instances fire the same tick a little apart; an instance that fires up to
// MinHold late finds the key still taken and skips the tick instead of
// running it a second time. [Locks.Close] hands job leases back this way;
// an adapter for a scheduler that takes a lock per run (gocronguard) does
// it with [Lock.HandBack].
const MinHold = time.Second

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
