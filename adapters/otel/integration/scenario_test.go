package integration

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold/core"
	"go.opentelemetry.io/otel/codes"
)

// TestScenario takes two instances through contention, renewals, a job
// run on one instance and skipped on the other, a leadership handover
// after the leader paused (its leases then lost by refusal), and a lock
// lost by deadline inside WithLock, and checks every metric and the spans
// of each step. Store-call metrics are checked against what the store
// really answered, counted by a wrapper around it.
func TestScenario(t *testing.T) {
	ctx := context.Background()
	storeClock := core.NewManualClock(t0)
	mem := core.NewMemoryStore(core.WithMemoryClock(storeClock))
	a, b := newInstance(t, mem), newInstance(t, mem)
	// advance moves the store's clock and those of the running instances,
	// a second at a time; an instance left out is paused.
	advance := func(d time.Duration, running ...*instance) {
		for step := time.Second; d > 0; d -= step {
			step = min(step, d)
			storeClock.Advance(step)
			for _, in := range running {
				in.clock.Advance(step)
			}
		}
	}
	kindOf := func(key string) string {
		switch {
		case strings.HasPrefix(key, "orders:"):
			return "lock"
		case key == "export:owner":
			return "job_lease"
		case key == "export":
			return "run_lock"
		case key == "feed":
			return "leadership"
		}
		t.Fatalf("unexpected key %q", key)
		return ""
	}

	// Contention: a takes the key, b's WithLock finds it held.
	order, err := a.locks.Acquire(ctx, "orders:42")
	if err != nil {
		t.Fatal(err)
	}
	err = b.locks.WithLock(ctx, "orders:42", func(context.Context) error {
		t.Error("WithLock ran under a held lock")
		return nil
	})
	if !errors.Is(err, core.ErrNotAcquired) {
		t.Fatalf("b's WithLock: %v", err)
	}
	checkMetrics(t, "a", a.metrics(t), with(lostAtZero, map[string]float64{
		"leasehold.acquire.attempts{lock.kind=lock,outcome=acquired}":        1,
		"leasehold.store.duration{outcome=acquired,store.operation=acquire}": 1,
		"leasehold.lease.held{lock.kind=lock}":                               1,
	}))
	checkMetrics(t, "b", b.metrics(t), with(lostAtZero, map[string]float64{
		"leasehold.acquire.attempts{lock.kind=lock,outcome=held}":        1,
		"leasehold.store.duration{outcome=held,store.operation=acquire}": 1,
	}))
	wl := b.spansNamed("leasehold.with_lock")
	if len(wl) != 1 || attr(wl[0].Attributes, "leasehold.outcome") != "held" || wl[0].Status.Code != codes.Error ||
		!slices.Equal(b.children(wl[0]), []string{"leasehold.acquire held"}) {
		t.Fatalf("b's with_lock spans: %+v, children %q", wl, b.children(wl[0]))
	}

	// Renewal, then release.
	advance(10*time.Second, a, b)
	checkMetrics(t, "a", a.metrics(t), with(lostAtZero, map[string]float64{
		"leasehold.acquire.attempts{lock.kind=lock,outcome=acquired}":        1,
		"leasehold.store.duration{outcome=acquired,store.operation=acquire}": 1,
		"leasehold.lease.held{lock.kind=lock}":                               1,
		"leasehold.renewals{lock.kind=lock,outcome=renewed}":                 1,
		"leasehold.store.duration{outcome=renewed,store.operation=renew}":    1,
	}))
	if err := order.Release(ctx); err != nil {
		t.Fatal(err)
	}
	checkMetrics(t, "a", a.metrics(t), with(lostAtZero, a.store.expected(kindOf), map[string]float64{
		"leasehold.lease.held{lock.kind=lock}": 0,
	}))
	if n := a.store.calls("release", "orders:42", "released"); n != 1 {
		t.Fatalf("the store saw %d releases", n)
	}

	// A job runs on a, and its tick on b is skipped.
	job := func(context.Context) error { return nil }
	guards := []core.JobOption{core.WithJobKey("export"), core.OnOneInstance(), core.WithoutOverlapping()}
	ja, err := a.locks.Job(job, guards...)
	if err != nil {
		t.Fatal(err)
	}
	jb, err := b.locks.Job(job, guards...)
	if err != nil {
		t.Fatal(err)
	}
	if err := ja.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if err := jb.Run(ctx); !errors.Is(err, core.ErrSkipped) {
		t.Fatalf("b's tick: %v", err)
	}
	checkMetrics(t, "a", a.metrics(t), with(lostAtZero, a.store.expected(kindOf), map[string]float64{
		"leasehold.lease.held{lock.kind=lock}":      0,
		"leasehold.lease.held{lock.kind=job_lease}": 1,
		"leasehold.lease.held{lock.kind=run_lock}":  0,
		"leasehold.job.runs{outcome=ok}":            1,
	}))
	checkMetrics(t, "b", b.metrics(t), with(lostAtZero, b.store.expected(kindOf), map[string]float64{
		"leasehold.job.skips{skip.reason=other_instance}": 1,
	}))
	if n := b.store.calls("acquire", "export:owner", "held"); n != 1 {
		t.Fatalf("b tried the job's lease %d times", n)
	}
	if runs := a.spansNamed("leasehold.job.run"); len(runs) != 1 || attr(runs[0].Attributes, "leasehold.outcome") != "ok" ||
		!slices.Equal(a.children(runs[0]), []string{"leasehold.acquire acquired", "leasehold.acquire acquired", "leasehold.release released"}) {
		t.Fatalf("a's job.run spans: %+v", runs)
	}
	if runs := b.spansNamed("leasehold.job.run"); len(runs) != 1 || attr(runs[0].Attributes, "leasehold.outcome") != "skipped" ||
		attr(runs[0].Attributes, "leasehold.skip.reason") != "other_instance" || runs[0].Status.Code != codes.Unset ||
		!slices.Equal(b.children(runs[0]), []string{"leasehold.acquire held"}) {
		t.Fatalf("b's job.run spans: %+v", runs)
	}

	// a leads the feed; b campaigns in vain.
	campaign := core.Campaign{TTL: 30 * time.Second, OnAcquired: func(*core.Lock) error { return nil }}
	ea, err := a.locks.Elect("feed", campaign)
	if err != nil {
		t.Fatal(err)
	}
	eb, err := b.locks.Elect("feed", campaign)
	if err != nil {
		t.Fatal(err)
	}
	if !ea.Leader() || eb.Leader() {
		t.Fatalf("leaders: a %v, b %v", ea.Leader(), eb.Leader())
	}
	checkMetrics(t, "a", a.metrics(t), with(lostAtZero, a.store.expected(kindOf), map[string]float64{
		"leasehold.lease.held{lock.kind=lock}":                     0,
		"leasehold.lease.held{lock.kind=job_lease}":                1,
		"leasehold.lease.held{lock.kind=run_lock}":                 0,
		"leasehold.lease.held{lock.kind=leadership}":               1,
		"leasehold.job.runs{outcome=ok}":                           1,
		"leasehold.leadership.changes{leadership.change=acquired}": 1,
	}))

	// a pauses past its leases' ttl: b takes the feed at a campaign and the
	// job at its next tick. When a resumes, the store refuses its renewals.
	advance(31*time.Second, b)
	if !eb.Leader() {
		t.Fatal("b did not take the feed over")
	}
	if err := jb.Run(ctx); err != nil {
		t.Fatalf("b's tick after the takeover: %v", err)
	}
	advance(10*time.Second, a, b)
	if ea.Leader() {
		t.Fatal("a still leads")
	}
	for _, key := range []string{"export:owner", "feed"} {
		if n := a.store.calls("renew", key, "refused"); n != 1 {
			t.Fatalf("the store refused %d renewals of %s", n, key)
		}
	}
	refused := 0
	for _, s := range a.spansNamed("leasehold.renew") {
		if attr(s.Attributes, "leasehold.outcome") == "refused" {
			refused++
			if s.Status.Code != codes.Error || s.Status.Description != "lock lost: the store refused the renewal" {
				t.Fatalf("refused renewal's status: %+v", s.Status)
			}
		}
	}
	if refused != 2 {
		t.Fatalf("%d refused renew spans, want 2", refused)
	}

	// b loses a lock by deadline inside WithLock: its renewals fail.
	b.store.failRenewals("orders:7")
	err = b.locks.WithLock(ctx, "orders:7", func(ctx context.Context) error {
		advance(30*time.Second, a, b)
		if ctx.Err() == nil {
			t.Error("the lock's context outlived its deadline")
		}
		return nil
	})
	var lost *core.LockLostError
	if !errors.As(err, &lost) || lost.Reason != core.LostDeadline {
		t.Fatalf("WithLock: %v", err)
	}
	if n := b.store.calls("renew", "orders:7", "error"); n < 2 {
		t.Fatalf("%d failed renewals before the deadline", n)
	}
	wl = b.spansNamed("leasehold.with_lock")
	last := wl[len(wl)-1]
	if attr(last.Attributes, "leasehold.outcome") != "lost" || last.Status.Code != codes.Error ||
		last.Status.Description != "lock lost: ttl passed without a confirmed renewal" ||
		len(last.Events) != 1 || last.Events[0].Name != "leasehold.lock.lost" ||
		attr(last.Events[0].Attributes, "leasehold.loss.reason") != "deadline" ||
		attr(last.Events[0].Attributes, "leasehold.lock.kind") != "lock" {
		t.Fatalf("the with_lock span of the lost lock: %+v", last)
	}

	checkMetrics(t, "a", a.metrics(t), with(lostAtZero, a.store.expected(kindOf), map[string]float64{
		"leasehold.lease.held{lock.kind=lock}":                           0,
		"leasehold.lease.held{lock.kind=job_lease}":                      0,
		"leasehold.lease.held{lock.kind=run_lock}":                       0,
		"leasehold.lease.held{lock.kind=leadership}":                     0,
		"leasehold.lease.lost{lock.kind=job_lease,loss.reason=refused}":  1,
		"leasehold.lease.lost{lock.kind=leadership,loss.reason=refused}": 1,
		"leasehold.job.runs{outcome=ok}":                                 1,
		"leasehold.leadership.changes{leadership.change=acquired}":       1,
		"leasehold.leadership.changes{leadership.change=lost}":           1,
	}))
	checkMetrics(t, "b", b.metrics(t), with(lostAtZero, b.store.expected(kindOf), map[string]float64{
		"leasehold.lease.held{lock.kind=lock}":                      0,
		"leasehold.lease.held{lock.kind=job_lease}":                 1,
		"leasehold.lease.held{lock.kind=run_lock}":                  0,
		"leasehold.lease.held{lock.kind=leadership}":                1,
		"leasehold.lease.lost{lock.kind=lock,loss.reason=deadline}": 1,
		"leasehold.job.runs{outcome=ok}":                            1,
		"leasehold.job.skips{skip.reason=other_instance}":           1,
		"leasehold.leadership.changes{leadership.change=acquired}":  1,
	}))

	// Every store call has its span, and no key is on any span.
	for _, in := range []*instance{a, b} {
		stores := 0
		for _, s := range in.spans.GetSpans() {
			if slices.Contains([]string{"leasehold.acquire", "leasehold.renew", "leasehold.release"}, s.Name) {
				stores++
			}
			if attr(s.Attributes, "leasehold.key") != "" || strings.Contains(s.Status.Description, "orders:") {
				t.Fatalf("span %s shows a key: %+v", s.Name, s)
			}
		}
		if calls := in.store.total(); stores != calls {
			t.Fatalf("%d store spans for %d store calls", stores, calls)
		}
	}
}
