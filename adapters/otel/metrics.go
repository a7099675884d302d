package leaseholdotel

import (
	"github.com/leasehold/leasehold/core"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
)

// The attributes of the metrics and spans.
const (
	attrKind       = attribute.Key("leasehold.lock.kind")
	attrOutcome    = attribute.Key("leasehold.outcome")
	attrOperation  = attribute.Key("leasehold.store.operation")
	attrLossReason = attribute.Key("leasehold.loss.reason")
	attrSkipReason = attribute.Key("leasehold.skip.reason")
	attrChange     = attribute.Key("leasehold.leadership.change")
	attrKey        = attribute.Key("leasehold.key")
)

// storeBuckets are the bounds of the store call histogram, in seconds: a
// store call on a healthy database takes a millisecond or a few, and one
// that takes a sizeable part of the ttl is what to see.
var storeBuckets = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}

// The values of the attributes, by index. Kinds are indexed by
// core.LockKind (0: unknown), store operations by storeOp, store outcomes
// by storeOutcome, loss reasons by core.LossReason (0: unknown).
var (
	kindNames      = [...]string{"other", "lock", "job_lease", "run_lock", "leadership"}
	storeOpNames   = [...]string{"acquire", "renew", "release"}
	outcomeNames   = [3][3]string{{"acquired", "held", "error"}, {"renewed", "refused", "error"}, {"released", "refused", "error"}}
	lossReasonName = [...]string{"other", "refused", "deadline"}
)

const (
	outcomeYes = iota // acquired, renewed, released
	outcomeNo         // held elsewhere, refused
	outcomeError
)

// storeOp indexes a store operation; ok is false for other operations.
func storeOp(t core.OpType) (i int, ok bool) {
	switch t {
	case core.OpAcquire:
		return 0, true
	case core.OpRenew:
		return 1, true
	case core.OpRelease:
		return 2, true
	}
	return 0, false
}

func storeOutcome(ok bool, err error) int {
	switch {
	case err != nil:
		return outcomeError
	case ok:
		return outcomeYes
	}
	return outcomeNo
}

func kindIndex(k core.LockKind) int {
	if k < 0 || int(k) >= len(kindNames) {
		return 0
	}
	return int(k)
}

func lossIndex(r core.LossReason) int {
	if r < 0 || int(r) >= len(lossReasonName) {
		return 0
	}
	return int(r)
}

// skipReason is the value of leasehold.skip.reason.
func skipReason(r core.SkipReason) string {
	switch r {
	case core.SkipOtherInstance:
		return "other_instance"
	case core.SkipRunInProgress:
		return "run_in_progress"
	case core.SkipShuttingDown:
		return "shutting_down"
	}
	return "other"
}

// metrics holds the instruments of one Instrument call, and the attribute
// sets of the measurements made for every store call and hold, built once
// so that those measurements allocate nothing.
type metrics struct {
	held          metric.Int64UpDownCounter
	attempts      metric.Int64Counter
	lost          metric.Int64Counter
	renewals      metric.Int64Counter
	storeDuration metric.Float64Histogram
	leadership    metric.Int64Counter
	jobRuns       metric.Int64Counter
	jobSkips      metric.Int64Counter

	kindSet     [len(kindNames)][]metric.AddOption
	attemptSet  [len(kindNames)][3][]metric.AddOption
	renewalSet  [len(kindNames)][3][]metric.AddOption
	lostSet     [len(kindNames)][len(lossReasonName)][]metric.AddOption
	durationSet [len(storeOpNames)][3][]metric.RecordOption
}

func newMetrics(m metric.Meter) *metrics {
	counter := func(name, unit, desc string) metric.Int64Counter {
		c, err := m.Int64Counter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		return usable[metric.Int64Counter](c, err, noop.Int64Counter{})
	}
	held, err := m.Int64UpDownCounter("leasehold.lease.held", metric.WithUnit("{lease}"),
		metric.WithDescription("Leases this process holds now."))
	duration, err2 := m.Float64Histogram("leasehold.store.duration", metric.WithUnit("s"),
		metric.WithDescription("Duration of the calls to the lock store."),
		metric.WithExplicitBucketBoundaries(storeBuckets...))
	ms := &metrics{
		held:          usable[metric.Int64UpDownCounter](held, err, noop.Int64UpDownCounter{}),
		attempts:      counter("leasehold.acquire.attempts", "{attempt}", "Acquire calls to the lock store, one per attempt."),
		lost:          counter("leasehold.lease.lost", "{lease}", "Leases lost: another instance may have run the same critical section."),
		renewals:      counter("leasehold.renewals", "{renewal}", "Renew calls to the lock store."),
		storeDuration: usable[metric.Float64Histogram](duration, err2, noop.Float64Histogram{}),
		leadership:    counter("leasehold.leadership.changes", "{change}", "Times this process became or stopped being a leader."),
		jobRuns:       counter("leasehold.job.runs", "{run}", "Job ticks that this process ran, or that failed before they could."),
		jobSkips:      counter("leasehold.job.skips", "{skip}", "Job ticks that this process skipped."),
	}
	add := func(kvs ...attribute.KeyValue) []metric.AddOption {
		return []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(kvs...))}
	}
	for k, kind := range kindNames {
		kv := attrKind.String(kind)
		ms.kindSet[k] = add(kv)
		for o := range 3 {
			ms.attemptSet[k][o] = add(kv, attrOutcome.String(outcomeNames[0][o]))
			ms.renewalSet[k][o] = add(kv, attrOutcome.String(outcomeNames[1][o]))
		}
		for r, reason := range lossReasonName {
			ms.lostSet[k][r] = add(kv, attrLossReason.String(reason))
		}
	}
	for op, name := range storeOpNames {
		for o, outcome := range outcomeNames[op] {
			set := attribute.NewSet(attrOperation.String(name), attrOutcome.String(outcome))
			ms.durationSet[op][o] = []metric.RecordOption{metric.WithAttributeSet(set)}
		}
	}
	return ms
}

// usable reports a provider's error to otel.Handle and returns the
// instrument, or a no-op if the provider gave none: one refused instrument
// must not silence the others, nor panic when used.
func usable[T any](inst T, err error, noop T) T {
	if err != nil {
		otel.Handle(err)
	}
	if any(inst) == nil {
		return noop
	}
	return inst
}
