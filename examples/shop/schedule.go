package shop

import (
	"context"
	"sync"
	"time"

	"github.com/leasehold/leasehold/core"
)

// Every calls fn, each time in a new goroutine, until ctx ends, at every
// time on clock that is offset past a multiple of period (multiples counted
// from the zero time.Time, which for a period that divides a day means from
// midnight UTC).
// Every(ctx, clock, 24*time.Hour, 2*time.Hour, fn) fires at 02:00 UTC each
// night, and Every(ctx, clock, 5*time.Minute, 0, fn) at :00, :05, :10 and so
// on: instances whose clocks agree fire the same tick together, as cron does.
//
// It is the smallest scheduler the example needs. For calendar schedules in
// a time zone, use a cron library: leasehold's adapters guard robfig/cron and
// gocron jobs the same way.
func Every(ctx context.Context, clock core.Clock, period, offset time.Duration, fn func()) {
	var (
		mu    sync.Mutex
		timer core.Timer
		arm   func()
	)
	arm = func() {
		mu.Lock()
		defer mu.Unlock()
		if ctx.Err() != nil {
			return
		}
		now := clock.Now()
		next := now.Add(-offset).Truncate(period).Add(period + offset)
		timer = clock.AfterFunc(next.Sub(now), func() {
			if ctx.Err() == nil {
				go fn()
				arm()
			}
		})
	}
	arm()
	context.AfterFunc(ctx, func() {
		mu.Lock()
		defer mu.Unlock()
		if timer != nil {
			timer.Stop()
		}
	})
}
