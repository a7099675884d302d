package leaseholdotel

import (
	"context"

	"github.com/leasehold/leasehold/core"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// ScopeName is the instrumentation scope of the meter and tracer this
// package creates.
const ScopeName = "github.com/leasehold/leasehold/adapters/otel"

// Option configures [Instrument].
type Option func(*config)

type config struct {
	meters  metric.MeterProvider
	tracers trace.TracerProvider
	keys    bool
}

// WithMeterProvider sets the MeterProvider the metrics are created on
// (default: the global one, otel.GetMeterProvider).
func WithMeterProvider(mp metric.MeterProvider) Option {
	return func(c *config) { c.meters = mp }
}

// WithTracerProvider sets the TracerProvider the spans are started on
// (default: the global one, otel.GetTracerProvider).
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(c *config) { c.tracers = tp }
}

// WithKeyAttribute puts the lock's key on every span, as leasehold.key, and
// on the metrics of jobs (runs, skips) and elections (leadership changes),
// whose keys are names fixed in the code. The metrics of single leases never
// carry keys: a key per order or per customer would make a time series each.
// Without this option, keys are also cut out of the error messages on spans.
// Give it when keys are neither sensitive nor countless.
func WithKeyAttribute() Option {
	return func(c *config) { c.keys = true }
}

// Instrument returns the option that makes a [core.Locks] instance report
// its metrics and spans:
//
//	locks, err := core.New(store, leaseholdotel.Instrument())
//
// Every store call the instance makes is measured, so the store needs no
// wrapping. Instruments that the MeterProvider refuses are reported to
// otel.Handle and replaced by no-ops; the rest still report.
func Instrument(opts ...Option) core.Option {
	cfg := config{}
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	if cfg.meters == nil {
		cfg.meters = otel.GetMeterProvider()
	}
	if cfg.tracers == nil {
		cfg.tracers = otel.GetTracerProvider()
	}
	m := newMetrics(cfg.meters.Meter(ScopeName))
	// Every loss series exists from the start, at 0: an alert on its
	// increase then sees the first loss too (Prometheus's increase() cannot
	// see a series that appears at 1).
	for k := range kindNames[1:] {
		for r := range lossReasonName[1:] {
			m.lost.Add(context.Background(), 0, m.lostSet[k+1][r+1]...)
		}
	}
	return core.WithObserver(&observer{
		tracer:  cfg.tracers.Tracer(ScopeName),
		metrics: m,
		keys:    cfg.keys,
	})
}
