package testserver

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leasehold/leasehold/core"
)

// Handover describes a lock handed from a holder to a waiter, for
// [Handovers]: holder and waiter are separate instances (separate Locks,
// separate store clients) on one store.
type Handover struct {
	// Hold takes the key for the holder. release gives it back; with Dies
	// it is never called (the holder's process is gone).
	Hold func(ctx context.Context) (release func() error, err error)
	// Wait is the waiter's waiting acquire of the key; it returns once the
	// waiter holds it, and release gives it back.
	Wait func(ctx context.Context) (release func() error, err error)
	// Tries counts the waiter's store calls (its acquire tries).
	Tries *atomic.Int64
	// LastTry, if set, gives the start and end of the waiter's last
	// acquire try (the one that took the key), to split a handover into
	// the way to the try, the try, and the return from it.
	LastTry func() (start, end time.Time)
	// RoundTrip is one bare round trip to the store's server (PING,
	// SELECT 1), measured in the same run as the baseline.
	RoundTrip func() error
	// Dies: the holder never releases, and does not renew (a killed
	// process); the waiter takes the key when the lease of TTL ends.
	Dies bool
	TTL  time.Duration
}

// LockOf is a [Handover]'s Hold or Wait through a core.Locks: it acquires
// key with opts, and its release releases the lock.
func LockOf(l *core.Locks, key string, opts ...core.AcquireOption) func(context.Context) (func() error, error) {
	return func(ctx context.Context) (func() error, error) {
		lk, err := l.Acquire(ctx, key, opts...)
		if err != nil {
			return nil, err
		}
		return func() error { return lk.Release(context.Background()) }, nil
	}
}

// HandoverCount is how many handovers [Handovers] measures per run: 200,
// or LEASEHOLD_HANDOVERS.
func HandoverCount() int {
	if n, err := strconv.Atoi(os.Getenv("LEASEHOLD_HANDOVERS")); err == nil && n > 0 {
		return n
	}
	return 200
}

// Handovers runs n handovers of h, each after a hold of about hold
// (uniform in [0.8, 1.2] × hold; the waiter starts waiting when the hold
// begins), and reports the handover latency (from the start of the
// holder's release, or from the lease's end when the holder dies, to the
// waiter's acquire returning) as p50-ms, p99-ms and max-ms, the bare round
// trip's p50 in the same run (rtt-p50-ms), the ratio p50/rtt, and the
// waiter's tries per handover. It splits a handover at the medians of its
// parts: the holder's release call (release-p50-ms) and, with LastTry,
// the time from the release's start (or the lease's end) to the start of
// the waiter's winning try (to-try-p50-ms), that try (try-p50-ms), and
// the rest of the waiter's acquire (after-try-p50-ms). It sets b.N aside:
// run it with -benchtime=1x.
func Handovers(b *testing.B, h Handover, hold time.Duration, n int) {
	b.Helper()
	ctx := context.Background()
	var lat, rtts, rels, toTry, try, after []time.Duration
	var tries int64
	for i := 0; i < n; i++ {
		release, err := h.Hold(ctx)
		if err != nil {
			b.Fatalf("handover %d: hold: %v", i, err)
		}
		held := time.Now()
		if h.Tries != nil {
			h.Tries.Store(0)
		}
		type got struct {
			at      time.Time
			release func() error
			err     error
		}
		done := make(chan got, 1)
		go func() {
			rel, err := h.Wait(ctx)
			done <- got{time.Now(), rel, err}
		}()
		// The baseline, while the waiter waits.
		for range 3 {
			t0 := time.Now()
			if err := h.RoundTrip(); err != nil {
				b.Fatalf("round trip: %v", err)
			}
			rtts = append(rtts, time.Since(t0))
		}
		var from time.Time
		if h.Dies {
			from = held.Add(h.TTL)
		} else {
			time.Sleep(time.Until(held.Add(time.Duration(float64(hold) * (0.8 + 0.4*rand.Float64())))))
			from = time.Now()
			if err := release(); err != nil {
				b.Fatalf("handover %d: release: %v", i, err)
			}
			rels = append(rels, time.Since(from))
		}
		g := <-done
		if g.err != nil {
			b.Fatalf("handover %d: waiter: %v", i, g.err)
		}
		lat = append(lat, g.at.Sub(from))
		if h.LastTry != nil {
			start, end := h.LastTry()
			toTry = append(toTry, start.Sub(from))
			try = append(try, end.Sub(start))
			after = append(after, g.at.Sub(end))
		}
		if h.Tries != nil {
			tries += h.Tries.Load()
		}
		if err := g.release(); err != nil {
			b.Fatalf("handover %d: waiter's release: %v", i, err)
		}
	}
	slices.Sort(lat)
	slices.Sort(rtts)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	pct := func(p float64) time.Duration { return lat[min(len(lat)-1, int(p*float64(len(lat))))] }
	rtt := rtts[len(rtts)/2]
	// The parts of a handover, each at its own median.
	for _, part := range []struct {
		unit string
		d    []time.Duration
	}{{"release-p50-ms", rels}, {"to-try-p50-ms", toTry}, {"try-p50-ms", try}, {"after-try-p50-ms", after}} {
		if len(part.d) > 0 {
			slices.Sort(part.d)
			b.ReportMetric(ms(part.d[len(part.d)/2]), part.unit)
		}
	}
	b.ReportMetric(ms(pct(0.5)), "p50-ms")
	b.ReportMetric(ms(pct(0.99)), "p99-ms")
	b.ReportMetric(ms(lat[len(lat)-1]), "max-ms")
	b.ReportMetric(ms(rtt), "rtt-p50-ms")
	b.ReportMetric(float64(pct(0.5))/float64(rtt), "p50/rtt")
	if h.Tries != nil {
		b.ReportMetric(float64(tries)/float64(n), "tries/handover")
	}
	b.Logf("%d handovers, holds ~%v: p50 %.2fms p99 %.2fms max %.2fms; round trip p50 %.3fms", n, hold, ms(pct(0.5)), ms(pct(0.99)), ms(lat[len(lat)-1]), ms(rtt))
}

// HandoverName names a run of [Handovers] by its hold.
func HandoverName(hold time.Duration, dies bool) string {
	if dies {
		return "holder-dies"
	}
	return fmt.Sprintf("hold-%v", hold)
}
