package testserver

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leasehold/leasehold/core"
)

// Takeover describes an election handed from a leader that steps down to a
// standby, for [Takeovers]: leader and standby are separate instances
// (separate Locks, separate store clients) on one store.
type Takeover struct {
	Leader, Standby *core.Locks
	Key             string
	// TTL is the campaign's ttl (zero: the instance's default). A
	// standby that missed the step-down would take over at its next
	// campaign, TTL/3 later.
	TTL time.Duration
	// Calls counts the standby's store calls, if not nil.
	Calls *atomic.Int64
	// RoundTrip is one bare round trip to the store's server, measured in
	// the same run as the baseline.
	RoundTrip func() error
	// Commit, if not nil, is one bare durable write (a one-row UPDATE
	// committed on its own), measured in the same run as a second
	// baseline: a store whose release and acquire each commit to disk
	// waits for the disk's flush twice per takeover.
	Commit func() error
}

// Takeovers runs n step-downs of t.Leader, each after it led for about
// lead (uniform in [0.8, 1.2] × lead; the standby is a candidate from
// just after the leader's OnAcquired), and reports the takeover latency,
// from the call of the leader's [core.Election.Stop] to the standby's
// OnAcquired, as p50-ms, p99-ms and max-ms; the same from Stop's return
// (the leader's release done) as ret-p50-ms and ret-p99-ms; the bare
// round trip's p50 and p99 in the same run (rtt-p50-ms, rtt-p99-ms: the
// machine's own tail); with Commit, a bare commit's p50 and p99
// (commit-p50-ms, commit-p99-ms: the disk's); the ratio p50/rtt; and,
// with Calls, the standby's store calls per takeover, from its Elect to
// its OnAcquired. It sets b.N aside: run it with -benchtime=1x.
func Takeovers(b *testing.B, t Takeover, lead time.Duration, n int) {
	b.Helper()
	ctx := context.Background()
	var lat, afterRet, rtts, commits []time.Duration
	type one struct{ total, stop time.Duration }
	var each []one
	var calls int64
	for i := 0; i < n; i++ {
		leading := make(chan time.Time, 1)
		leader, err := t.Leader.Elect(t.Key, core.Campaign{TTL: t.TTL, OnAcquired: func(*core.Lock) error {
			leading <- time.Now()
			return nil
		}})
		if err != nil {
			b.Fatalf("takeover %d: leader's Elect: %v", i, err)
		}
		var led time.Time
		select {
		case led = <-leading:
		case <-time.After(10 * time.Second):
			b.Fatalf("takeover %d: the leader did not lead within 10s of its Elect on a free key", i)
		}
		if t.Calls != nil {
			t.Calls.Store(0)
		}
		took := make(chan time.Time, 1)
		standby, err := t.Standby.Elect(t.Key, core.Campaign{TTL: t.TTL, OnAcquired: func(*core.Lock) error {
			took <- time.Now()
			return nil
		}})
		if err != nil {
			b.Fatalf("takeover %d: standby's Elect: %v", i, err)
		}
		// The baseline, while the standby stands by.
		for range 3 {
			t0 := time.Now()
			if err := t.RoundTrip(); err != nil {
				b.Fatalf("round trip: %v", err)
			}
			rtts = append(rtts, time.Since(t0))
			if t.Commit != nil {
				t0 := time.Now()
				if err := t.Commit(); err != nil {
					b.Fatalf("commit: %v", err)
				}
				commits = append(commits, time.Since(t0))
			}
		}
		time.Sleep(time.Until(led.Add(time.Duration(float64(lead) * (0.8 + 0.4*rand.Float64())))))
		select {
		case <-took:
			b.Fatalf("takeover %d: the standby led while the leader did", i)
		default:
		}
		stop := time.Now()
		if err := leader.Stop(ctx); err != nil {
			b.Fatalf("takeover %d: leader's Stop: %v", i, err)
		}
		stopped := time.Now()
		var at time.Time
		select {
		case at = <-took:
		case <-time.After(time.Minute):
			b.Fatalf("takeover %d: the standby did not take over within a minute of the step-down", i)
		}
		lat = append(lat, at.Sub(stop))
		each = append(each, one{at.Sub(stop), stopped.Sub(stop)})
		afterRet = append(afterRet, at.Sub(stopped))
		if t.Calls != nil {
			calls += t.Calls.Load()
		}
		// The standby steps down too, while no one else is a candidate:
		// the next round starts on a free key.
		if err := standby.Stop(ctx); err != nil {
			b.Fatalf("takeover %d: standby's Stop: %v", i, err)
		}
	}
	slices.SortFunc(each, func(a, b one) int { return int(b.total - a.total) })
	for _, o := range each[:min(3, len(each))] {
		b.Logf("slow takeover: %.2fms, of which Stop (the leader's release) %.2fms", float64(o.total)/1e6, float64(o.stop)/1e6)
	}
	slices.Sort(lat)
	slices.Sort(afterRet)
	slices.Sort(rtts)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	pct := func(s []time.Duration, p float64) time.Duration { return s[min(len(s)-1, int(p*float64(len(s))))] }
	rtt := rtts[len(rtts)/2]
	b.ReportMetric(ms(pct(lat, 0.5)), "p50-ms")
	b.ReportMetric(ms(pct(lat, 0.99)), "p99-ms")
	b.ReportMetric(ms(lat[len(lat)-1]), "max-ms")
	b.ReportMetric(ms(pct(afterRet, 0.5)), "ret-p50-ms")
	b.ReportMetric(ms(pct(afterRet, 0.99)), "ret-p99-ms")
	b.ReportMetric(ms(rtt), "rtt-p50-ms")
	b.ReportMetric(ms(pct(rtts, 0.99)), "rtt-p99-ms")
	if len(commits) > 0 {
		slices.Sort(commits)
		b.ReportMetric(ms(pct(commits, 0.5)), "commit-p50-ms")
		b.ReportMetric(ms(pct(commits, 0.99)), "commit-p99-ms")
		b.Logf("a bare durable commit: p50 %.2fms p99 %.2fms max %.2fms", ms(pct(commits, 0.5)), ms(pct(commits, 0.99)), ms(commits[len(commits)-1]))
	}
	b.ReportMetric(float64(pct(lat, 0.5))/float64(rtt), "p50/rtt")
	if t.Calls != nil {
		b.ReportMetric(float64(calls)/float64(n), "calls/takeover")
	}
	b.Logf("%d takeovers, leading ~%v: from Stop's call p50 %.2fms p99 %.2fms max %.2fms; from its return p50 %.2fms p99 %.2fms; round trip p50 %.3fms p99 %.3fms",
		n, lead, ms(pct(lat, 0.5)), ms(pct(lat, 0.99)), ms(lat[len(lat)-1]), ms(pct(afterRet, 0.5)), ms(pct(afterRet, 0.99)), ms(rtt), ms(pct(rtts, 0.99)))
}

// TakeoverName names a run of [Takeovers] by how long the leader leads.
func TakeoverName(lead time.Duration) string { return fmt.Sprintf("lead-%v", lead) }
