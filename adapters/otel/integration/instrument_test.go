package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	leaseholdotel "github.com/leasehold/leasehold/adapters/otel"
	"github.com/leasehold/leasehold/core"
	"go.opentelemetry.io/otel"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// slowStore takes a known, real time to acquire: a manual clock cannot make
// a store call last, and the histogram measures real time.
type slowStore struct {
	core.LockStore
	delay time.Duration
}

func (s slowStore) Acquire(ctx context.Context, key, owner string, ttl time.Duration) (int64, bool, error) {
	time.Sleep(s.delay)
	return s.LockStore.Acquire(ctx, key, owner, ttl)
}

// TestStoreDurationIsInSeconds: the histogram records seconds, as its unit
// says, not milliseconds or nanoseconds.
func TestStoreDurationIsInSeconds(t *testing.T) {
	const delay = 20 * time.Millisecond
	in := newInstance(t, slowStore{core.NewMemoryStore(), delay})
	if _, err := in.locks.Acquire(context.Background(), "k"); err != nil {
		t.Fatal(err)
	}
	p := in.histogram(t, "leasehold.store.duration{outcome=acquired,store.operation=acquire}")
	if p.Count != 1 || p.Sum < delay.Seconds() || p.Sum > 1 {
		t.Fatalf("count %d, sum %v s; want 1 call of at least %v s (and far less than a second)", p.Count, p.Sum, delay.Seconds())
	}
}

// failingStore fails every acquisition with a message that quotes the key,
// as drivers' messages do.
type failingStore struct{ core.LockStore }

func (failingStore) Acquire(_ context.Context, key, _ string, _ time.Duration) (int64, bool, error) {
	return 0, false, fmt.Errorf("teststore: acquire %q: connection refused", key)
}

// TestKeysOnlyWhenAskedFor: without WithKeyAttribute no span carries a key,
// and the keys are cut out of error messages; with it, spans and the
// metrics of jobs carry it, and the metrics of leases still do not.
func TestKeysOnlyWhenAskedFor(t *testing.T) {
	ctx := context.Background()
	run := func(t *testing.T, opts ...leaseholdotel.Option) (*instance, *instance) {
		ok := newInstance(t, core.NewMemoryStore(), opts...)
		broken := newInstance(t, failingStore{core.NewMemoryStore()}, opts...)
		for _, in := range []*instance{ok, broken} {
			_ = in.locks.WithLock(ctx, "customer:alice", func(context.Context) error { return nil })
			job, err := in.locks.Job(func(context.Context) error { return nil }, core.WithJobKey("export"), core.OnOneInstance())
			if err != nil {
				t.Fatal(err)
			}
			_ = job.Run(ctx)
		}
		return ok, broken
	}

	t.Run("without", func(t *testing.T) {
		ok, broken := run(t)
		for _, in := range []*instance{ok, broken} {
			for _, s := range in.spans.GetSpans() {
				if attr(s.Attributes, "leasehold.key") != "" {
					t.Errorf("span %s has a key", s.Name)
				}
			}
		}
		// The messages are leasehold's and the store's, keys cut out.
		for _, name := range []string{"leasehold.acquire", "leasehold.with_lock", "leasehold.job.run"} {
			spans := broken.spansNamed(name)
			if len(spans) == 0 {
				t.Fatalf("no %s span", name)
			}
			for _, s := range spans {
				if d := s.Status.Description; !strings.Contains(d, "acquire <key>: connection refused") || strings.Contains(d, "alice") || strings.Contains(d, "export") {
					t.Errorf("%s's status: %q", name, d)
				}
			}
		}
		if _, has := ok.metrics(t)["leasehold.job.runs{outcome=ok}"]; !has {
			t.Errorf("job runs without a key: %v", ok.metrics(t))
		}
	})

	t.Run("with", func(t *testing.T) {
		ok, broken := run(t, leaseholdotel.WithKeyAttribute())
		for _, s := range ok.spans.GetSpans() {
			if k := attr(s.Attributes, "leasehold.key"); k != "customer:alice" && k != "export" && k != "export:owner" {
				t.Errorf("span %s has key %q", s.Name, k)
			}
		}
		for _, s := range broken.spansNamed("leasehold.with_lock") {
			if !strings.Contains(s.Status.Description, `"customer:alice"`) {
				t.Errorf("with_lock's status hides the key: %q", s.Status.Description)
			}
		}
		m := ok.metrics(t)
		if m["leasehold.job.runs{key=export,outcome=ok}"] != 1 {
			t.Errorf("job runs without the job's key: %v", m)
		}
		for series := range m {
			if strings.Contains(series, "customer:alice") || strings.HasPrefix(series, "leasehold.lease.held") && strings.Contains(series, "key=") {
				t.Errorf("a lease metric carries a key: %s", series)
			}
		}
		if m := broken.metrics(t); m["leasehold.job.runs{key=export,outcome=error}"] != 1 {
			t.Errorf("failed tick not counted as a run in error: %v", m)
		}
	})
}

// TestGlobalProvidersSetAfterInstrument: by default the adapter reports
// through the global providers, even those set after the instance started.
func TestGlobalProvidersSetAfterInstrument(t *testing.T) {
	locks, err := core.New(core.NewMemoryStore(), core.WithLogger(discard), leaseholdotel.Instrument())
	if err != nil {
		t.Fatal(err)
	}
	defer locks.Close(context.Background())

	reader, spans := sdkmetric.NewManualReader(), tracetest.NewInMemoryExporter()
	prevM, prevT := otel.GetMeterProvider(), otel.GetTracerProvider()
	otel.SetMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)))
	otel.SetTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans)))
	t.Cleanup(func() { otel.SetMeterProvider(prevM); otel.SetTracerProvider(prevT) })

	if err := locks.WithLock(context.Background(), "k", func(context.Context) error { return nil }); err != nil {
		t.Fatal(err)
	}
	in := &instance{reader: reader, spans: spans}
	if got := in.metrics(t)["leasehold.acquire.attempts{lock.kind=lock,outcome=acquired}"]; got != 1 {
		t.Fatalf("attempts through the global provider: %v", got)
	}
	if n := len(in.spansNamed("leasehold.with_lock")); n != 1 {
		t.Fatalf("%d with_lock spans through the global provider", n)
	}
}

// TestPanickingCallbackEndsItsSpan: a WithLock callback that panics still
// ends its span, with an error status, and the lock is released.
func TestPanickingCallbackEndsItsSpan(t *testing.T) {
	in := newInstance(t, core.NewMemoryStore())
	func() {
		defer func() { _ = recover() }()
		_ = in.locks.WithLock(context.Background(), "k", func(context.Context) error { panic("boom") })
	}()
	spans := in.spansNamed("leasehold.with_lock")
	if len(spans) != 1 || spans[0].Status.Description != "leasehold: the function panicked" {
		t.Fatalf("with_lock spans: %+v", spans)
	}
	if held := in.metrics(t)["leasehold.lease.held{lock.kind=lock}"]; held != 0 {
		t.Fatalf("%v leases held after the panic", held)
	}
}
