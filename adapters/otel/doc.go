// Package leaseholdotel reports what a leasehold [core.Locks] instance does
// as OpenTelemetry metrics and traces: the leases it holds, its attempts,
// renewals and losses, the time of each store call, leadership changes,
// and job ticks run and skipped.
//
//	import leaseholdotel "github.com/leasehold/leasehold/adapters/otel"
//
// The package is named leaseholdotel so that it never clashes with
// go.opentelemetry.io/otel, which a service imports too.
//
// # Wiring
//
// One option, given to [core.New], instruments the instance and its store:
//
//	locks, err := core.New(store, core.WithLogger(logger), leaseholdotel.Instrument())
//
// It uses the global MeterProvider and TracerProvider (set them with
// otel.SetMeterProvider and otel.SetTracerProvider before this call; set
// later, they see what happens from then on), or those given with
// [WithMeterProvider] and [WithTracerProvider].
// The instance reports through a [core.Observer], so every store call is
// seen, whichever store it is, and nothing else needs wrapping.
//
// # Metrics
//
//	leasehold.lease.held          UpDownCounter {lease}    leasehold.lock.kind
//	leasehold.acquire.attempts    Counter       {attempt}  leasehold.lock.kind, leasehold.outcome (acquired, held, error)
//	leasehold.lease.lost          Counter       {lease}    leasehold.lock.kind, leasehold.loss.reason (refused, deadline)
//	leasehold.renewals            Counter       {renewal}  leasehold.lock.kind, leasehold.outcome (renewed, refused, error)
//	leasehold.store.duration      Histogram     s          leasehold.store.operation (acquire, renew, release), leasehold.outcome
//	leasehold.leadership.changes  Counter       {change}   leasehold.leadership.change (acquired, lost)
//	leasehold.job.runs            Counter       {run}      leasehold.outcome (ok, error, lost)
//	leasehold.job.skips           Counter       {skip}     leasehold.skip.reason (other_instance, run_in_progress, shutting_down)
//
// leasehold.lock.kind is lock (Acquire, WithLock), job_lease (a job's
// OnOneInstance lease), run_lock (a job's WithoutOverlapping run lock) or
// leadership (an election's lease). Alert on any increase of
// leasehold.lease.lost: another instance may have run the same critical
// section. docs/observability.md has the full table and alert rules.
//
// # Traces
//
// Each store call is a client span (leasehold.acquire, leasehold.renew,
// leasehold.release), and each [core.Locks.WithLock] call and job tick an
// internal span (leasehold.with_lock, leasehold.job.run) with the store
// calls it makes inside it; the callback's context carries the span, so
// the work done under the lock nests there too. A lock lost during a
// WithLock or a run adds a leasehold.lock.lost event, with its reason, to
// that span, which ends with an error status saying how the lock was lost.
//
// Keys stay out of traces and metrics unless [WithKeyAttribute] is given:
// a key can name a customer or an order, and a key per order would make a
// time series per order. Without it, the error messages put on spans have
// their keys cut out too.
package leaseholdotel
