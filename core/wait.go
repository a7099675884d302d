package core

import (
	"context"
	"math/rand/v2"
	"time"
)

// backoff spaces the attempts of a waiting Acquire: exponential from a short
// first delay, capped, with full jitter so that waiters do not retry in step.
type backoff struct {
	cur, cap time.Duration
}

func newBackoff(ttl time.Duration) *backoff {
	limit := min(time.Second, max(ttl/3, time.Millisecond))
	return &backoff{cur: min(25*time.Millisecond, limit), cap: limit}
}

func (b *backoff) next() time.Duration {
	d := b.cur/2 + rand.N(b.cur/2+1)
	b.cur = min(b.cur*2, b.cap)
	return d
}

// sleep waits d on clock, or until ctx is done.
func sleep(ctx context.Context, clock Clock, d time.Duration) error {
	woke := make(chan struct{})
	t := clock.AfterFunc(d, func() { close(woke) })
	defer t.Stop()
	select {
	case <-woke:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}
