package integration

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	leaseholdotel "github.com/leasehold/leasehold/adapters/otel"
	"github.com/leasehold/leasehold/core"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
)

// providers are the set-ups the benchmarks compare: the SDK as a service
// runs it (metrics aggregated, every span sampled and batched to an
// exporter), and no-op providers (instrumented but switched off).
func providers(b *testing.B) map[string][]leaseholdotel.Option {
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()))
	b.Cleanup(func() { _ = tp.Shutdown(context.Background()); _ = mp.Shutdown(context.Background()) })
	return map[string][]leaseholdotel.Option{
		"sdk":  {leaseholdotel.WithMeterProvider(mp), leaseholdotel.WithTracerProvider(tp)},
		"noop": {leaseholdotel.WithMeterProvider(metricnoop.NewMeterProvider()), leaseholdotel.WithTracerProvider(tracenoop.NewTracerProvider())},
	}
}

// cycler acquires and releases rotating keys on one instance.
type cycler struct {
	locks *core.Locks
	keys  []string
	i     int
}

func newCycler(b *testing.B, opts ...core.Option) *cycler {
	l, err := core.New(core.NewMemoryStore(), append([]core.Option{core.WithLogger(discard)}, opts...)...)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = l.Close(context.Background()) })
	c := &cycler{locks: l, keys: make([]string, 1024)}
	for i := range c.keys {
		c.keys[i] = "bench:" + strconv.Itoa(i)
	}
	return c
}

func (c *cycler) cycle(b *testing.B) {
	ctx := context.Background()
	lk, err := c.locks.Acquire(ctx, c.keys[c.i%len(c.keys)])
	if err != nil {
		b.Fatal(err)
	}
	if err := lk.Release(ctx); err != nil {
		b.Fatal(err)
	}
	c.i++
}

func median(ds []time.Duration) time.Duration {
	slices.Sort(ds)
	return ds[len(ds)/2]
}

// BenchmarkAcquireRelease measures the allocations an instrumented
// acquire+release adds (two store calls, two spans, a hold) on the memory
// store, and the time as a ratio to an uninstrumented instance measured in
// the same loop, alternating, so both halves share the machine's state
// (the ratio of their medians).
func BenchmarkAcquireRelease(b *testing.B) {
	b.Run("plain", func(b *testing.B) {
		c := newCycler(b)
		b.ReportAllocs()
		for b.Loop() {
			c.cycle(b)
		}
	})
	for name, opts := range providers(b) {
		b.Run(name, func(b *testing.B) {
			plain, inst := newCycler(b), newCycler(b, leaseholdotel.Instrument(opts...))
			// Medians, not sums: a burst from another process on the
			// machine then moves neither side.
			tPlain, tInst := make([]time.Duration, b.N), make([]time.Duration, b.N)
			b.ResetTimer()
			for i := range b.N {
				start := time.Now()
				plain.cycle(b)
				mid := time.Now()
				inst.cycle(b)
				tPlain[i], tInst[i] = mid.Sub(start), time.Since(mid)
			}
			b.StopTimer()
			b.ReportMetric(float64(median(tInst))/float64(median(tPlain)), "instrumented/plain")
			b.ReportMetric(testing.AllocsPerRun(1000, func() { inst.cycle(b) })-testing.AllocsPerRun(1000, func() { plain.cycle(b) }), "added-allocs/op")
		})
	}
}
