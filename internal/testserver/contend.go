package testserver

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/leasehold/leasehold/core"
)

// Contend has every one of waiters (separate Locks, one per instance) take
// key in a loop under sustained contention: a waiting acquire, a hold of
// about hold (uniform in [0.8, 1.2] × hold), a release, a pause of about
// think (the same spread; 0: none, the next waiting acquire at once), until
// total acquisitions were made. It reports
// how the waits were spread: each acquire's wait (from its call to its
// return) as wait-p50-ms, wait-p99-ms and wait-max-ms over all waiters;
// the worst waiter's p50 and max, a wait still under way at the end
// included (worst-p50-ms, worst-max-ms); the
// fewest and most acquisitions of one waiter (min-acq, max-acq); the
// handover latency (from the start of a release to the next holder's
// acquire returning) as p50-ms and p99-ms; and a bare round trip's p50,
// measured every 20ms meanwhile (rtt-p50-ms). It logs each waiter's
// figures. It sets b.N aside: run it with -benchtime=1x.
func Contend(b *testing.B, waiters []*core.Locks, key string, hold, think time.Duration, total int, roundTrip func() error) {
	b.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var (
		mu       sync.Mutex
		count    int
		released time.Time // start of the latest release; zero before the first
		handover []time.Duration
		failed   error
	)
	waits := make([][]time.Duration, len(waiters))
	since := make([]time.Time, len(waiters))          // start of each waiter's wait under way
	unfinished := make([]time.Duration, len(waiters)) // each waiter's wait under way at the end
	var wg sync.WaitGroup
	for i, l := range waiters {
		wg.Go(func() {
			for {
				start := time.Now()
				mu.Lock()
				since[i] = start
				mu.Unlock()
				lk, err := l.Acquire(ctx, key, core.WithWait(time.Hour))
				got := time.Now()
				if err != nil {
					if ctx.Err() == nil {
						mu.Lock()
						failed = fmt.Errorf("waiter %d: %w", i, err)
						mu.Unlock()
						cancel()
					}
					return
				}
				mu.Lock()
				count++
				since[i] = time.Time{}
				done := count > total
				if done {
					for j, t := range since {
						if !t.IsZero() {
							unfinished[j] = got.Sub(t)
						}
					}
				} else {
					waits[i] = append(waits[i], got.Sub(start))
					if !released.IsZero() {
						handover = append(handover, got.Sub(released))
					}
				}
				mu.Unlock()
				if !done {
					time.Sleep(time.Duration(float64(hold) * (0.8 + 0.4*rand.Float64())))
				}
				mu.Lock()
				released = time.Now()
				mu.Unlock()
				if err := lk.Release(context.Background()); err != nil {
					mu.Lock()
					failed = fmt.Errorf("waiter %d: release: %w", i, err)
					mu.Unlock()
					cancel()
					return
				}
				if done {
					cancel()
					return
				}
				if think > 0 {
					time.Sleep(time.Duration(float64(think) * (0.8 + 0.4*rand.Float64())))
				}
			}
		})
	}
	var rtts []time.Duration
	tick := time.NewTicker(20 * time.Millisecond)
	for ctx.Err() == nil {
		select {
		case <-tick.C:
			t0 := time.Now()
			if err := roundTrip(); err != nil {
				b.Fatalf("round trip: %v", err)
			}
			rtts = append(rtts, time.Since(t0))
		case <-ctx.Done():
		}
	}
	tick.Stop()
	wg.Wait()
	if failed != nil {
		b.Fatal(failed)
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	pct := func(s []time.Duration, p float64) time.Duration {
		if len(s) == 0 {
			return 0
		}
		return s[min(len(s)-1, int(p*float64(len(s))))]
	}
	var all []time.Duration
	var rows strings.Builder
	minAcq, maxAcq := total, 0
	var worstP50, worstMax time.Duration
	for i, w := range waits {
		slices.Sort(w)
		all = append(all, w...)
		minAcq, maxAcq = min(minAcq, len(w)), max(maxAcq, len(w))
		worstP50, worstMax = max(worstP50, pct(w, 0.5)), max(worstMax, pct(w, 1), unfinished[i])
		fmt.Fprintf(&rows, "\n  waiter %2d: %3d acquisitions, wait p50 %7.2fms p99 %7.2fms max %7.2fms; waiting %7.2fms at the end", i, len(w), ms(pct(w, 0.5)), ms(pct(w, 0.99)), ms(pct(w, 1)), ms(unfinished[i]))
	}
	slices.Sort(all)
	slices.Sort(handover)
	slices.Sort(rtts)
	rtt := pct(rtts, 0.5)
	b.ReportMetric(ms(pct(all, 0.5)), "wait-p50-ms")
	b.ReportMetric(ms(pct(all, 0.99)), "wait-p99-ms")
	b.ReportMetric(ms(pct(all, 1)), "wait-max-ms")
	b.ReportMetric(ms(worstP50), "worst-p50-ms")
	b.ReportMetric(ms(worstMax), "worst-max-ms")
	b.ReportMetric(float64(minAcq), "min-acq")
	b.ReportMetric(float64(maxAcq), "max-acq")
	b.ReportMetric(ms(pct(handover, 0.5)), "p50-ms")
	b.ReportMetric(ms(pct(handover, 0.99)), "p99-ms")
	b.ReportMetric(ms(rtt), "rtt-p50-ms")
	b.Logf("%d waiters, %d acquisitions, holds ~%v, pauses ~%v: handover p50 %.2fms p99 %.2fms max %.2fms; wait p50 %.1fms p99 %.1fms max %.1fms; round trip p50 %.3fms%s",
		len(waiters), len(all), hold, think, ms(pct(handover, 0.5)), ms(pct(handover, 0.99)), ms(pct(handover, 1)), ms(pct(all, 0.5)), ms(pct(all, 0.99)), ms(pct(all, 1)), ms(rtt), rows.String())
}
