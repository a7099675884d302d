package leaseholdotel

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/leasehold/leasehold/core"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// observer is the core.Observer that Instrument installs.
type observer struct {
	tracer  trace.Tracer
	metrics *metrics
	keys    bool // put keys on spans and on job and election metrics
}

func endNothing(bool, error) {}

var (
	storeSpanNames = [len(storeOpNames)]string{"leasehold.acquire", "leasehold.renew", "leasehold.release"}
	clientSpan     = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindClient)}
)

// Start implements core.Observer.
func (o *observer) Start(ctx context.Context, op core.Op) (context.Context, func(ok bool, err error)) {
	if i, ok := storeOp(op.Type); ok {
		return o.storeCall(ctx, op, i)
	}
	switch op.Type {
	case core.OpHold:
		return ctx, o.hold(ctx, op)
	case core.OpWithLock, core.OpJobRun:
		return o.run(ctx, op)
	}
	return ctx, endNothing
}

// storeCall times store operation i, counts it, and spans it.
func (o *observer) storeCall(ctx context.Context, op core.Op, i int) (context.Context, func(bool, error)) {
	ctx, span := o.tracer.Start(ctx, storeSpanNames[i], clientSpan...)
	kind := kindIndex(op.Kind)
	start := time.Now()
	return ctx, func(ok bool, err error) {
		elapsed := time.Since(start).Seconds()
		out, m := storeOutcome(ok, err), o.metrics
		m.storeDuration.Record(ctx, elapsed, m.durationSet[i][out]...)
		switch op.Type {
		case core.OpAcquire:
			m.attempts.Add(ctx, 1, m.attemptSet[kind][out]...)
		case core.OpRenew:
			m.renewals.Add(ctx, 1, m.renewalSet[kind][out]...)
		}
		if span.IsRecording() {
			span.SetAttributes(o.withKey(op.Key, attrKind.String(kindNames[kind]), attrOutcome.String(outcomeNames[i][out]))...)
			switch {
			case err != nil:
				span.SetStatus(codes.Error, o.describe(err, op.Key))
			case !ok && op.Type == core.OpRenew:
				span.SetStatus(codes.Error, "lock lost: the store refused the renewal")
			}
		}
		span.End()
	}
}

// hold counts a lease while this process holds it, and its loss.
func (o *observer) hold(ctx context.Context, op core.Op) func(bool, error) {
	m, kind := o.metrics, kindIndex(op.Kind)
	m.held.Add(ctx, 1, m.kindSet[kind]...)
	if op.Kind == core.KindLeadership {
		m.leadership.Add(ctx, 1, metric.WithAttributes(o.withKey(op.Key, attrChange.String("acquired"))...))
	}
	return func(ok bool, err error) {
		m.held.Add(ctx, -1, m.kindSet[kind]...)
		if op.Kind == core.KindLeadership {
			m.leadership.Add(ctx, 1, metric.WithAttributes(o.withKey(op.Key, attrChange.String("lost"))...))
		}
		var lost *core.LockLostError
		if err == nil || !errors.As(err, &lost) {
			return
		}
		r := lossIndex(lost.Reason)
		m.lost.Add(ctx, 1, m.lostSet[kind][r]...)
		// The span the lock was taken in (a WithLock, a job run) hears of
		// the loss as it happens, if it is still going.
		if span := trace.SpanFromContext(ctx); span.IsRecording() {
			span.AddEvent("leasehold.lock.lost", trace.WithAttributes(
				o.withKey(op.Key, attrKind.String(kindNames[kind]), attrLossReason.String(lossReasonName[r]))...))
		}
	}
}

// run spans a WithLock call or a job tick, and counts job ticks.
func (o *observer) run(ctx context.Context, op core.Op) (context.Context, func(bool, error)) {
	name := "leasehold.with_lock"
	if op.Type == core.OpJobRun {
		name = "leasehold.job.run"
	}
	ctx, span := o.tracer.Start(ctx, name)
	if span.IsRecording() {
		span.SetAttributes(o.withKey(op.Key)...)
		if op.Type == core.OpWithLock {
			span.SetAttributes(attrKind.String(kindNames[kindIndex(op.Kind)]))
		}
	}
	return ctx, func(ran bool, err error) {
		outcome, skipped, lost := runOutcome(ran, err)
		if span.IsRecording() {
			span.SetAttributes(attrOutcome.String(outcome))
			switch {
			case skipped != nil:
				span.SetAttributes(attrSkipReason.String(skipReason(skipped.Reason)))
			case lost != nil:
				span.SetStatus(codes.Error, "lock lost: "+lost.Reason.String())
			case err != nil:
				span.SetStatus(codes.Error, o.describe(err, op.Key, op.Key+":owner"))
			}
		}
		span.End()
		switch {
		case op.Type != core.OpJobRun:
		case skipped != nil:
			reason := attrSkipReason.String(skipReason(skipped.Reason))
			o.metrics.jobSkips.Add(ctx, 1, metric.WithAttributes(o.withKey(op.Key, reason)...))
		default:
			o.metrics.jobRuns.Add(ctx, 1, metric.WithAttributes(o.withKey(op.Key, attrOutcome.String(outcome))...))
		}
	}
}

// runOutcome is the value of leasehold.outcome for a WithLock or a job
// tick, with the skip or loss that decided it.
func runOutcome(ran bool, err error) (outcome string, skipped *core.SkippedError, lost *core.LockLostError) {
	switch {
	case err == nil:
		return "ok", nil, nil
	case errors.As(err, &skipped):
		return "skipped", skipped, nil
	case !ran && errors.Is(err, core.ErrNotAcquired):
		return "held", nil, nil
	case errors.As(err, &lost):
		return "lost", nil, lost
	}
	return "error", nil, nil
}

// withKey returns attrs, with the key if the user opted in. Spans take it
// always; metrics only for jobs and elections, whose keys are few.
func (o *observer) withKey(key string, attrs ...attribute.KeyValue) []attribute.KeyValue {
	if o.keys {
		return append(attrs, attrKey.String(key))
	}
	return attrs
}

// describe returns err's message for a span's status. Unless keys are
// welcome, it cuts out the keys, which leasehold's messages (and those of
// its drivers) quote: a job's message quotes its lease key too.
func (o *observer) describe(err error, keys ...string) string {
	msg := err.Error()
	if o.keys {
		return msg
	}
	for _, k := range keys {
		msg = strings.ReplaceAll(msg, strconv.Quote(k), "<key>")
	}
	return msg
}
