package integration

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	leaseholdotel "github.com/leasehold/leasehold/adapters/otel"
	"github.com/leasehold/leasehold/core"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

var discard = slog.New(slog.DiscardHandler)

// instance is one process of a test: a Locks on the shared store, with its
// own clock, its own metric reader and span exporter, and a store wrapper
// that counts what the store really answered.
type instance struct {
	clock  *core.ManualClock
	store  *countingStore
	locks  *core.Locks
	reader *sdkmetric.ManualReader
	spans  *tracetest.InMemoryExporter
}

func newInstance(t *testing.T, store core.LockStore, opts ...leaseholdotel.Option) *instance {
	t.Helper()
	in := &instance{
		clock:  core.NewManualClock(t0),
		store:  &countingStore{LockStore: store, counts: make(map[string]int)},
		reader: sdkmetric.NewManualReader(),
		spans:  tracetest.NewInMemoryExporter(),
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(in.reader))
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(in.spans))
	opts = append([]leaseholdotel.Option{leaseholdotel.WithMeterProvider(mp), leaseholdotel.WithTracerProvider(tp)}, opts...)
	locks, err := core.New(in.store,
		core.WithClock(in.clock),
		core.WithLogger(discard),
		leaseholdotel.Instrument(opts...))
	if err != nil {
		t.Fatal(err)
	}
	in.locks = locks
	t.Cleanup(func() {
		// Close keeps a job lease for a second after its last run started.
		in.clock.Advance(time.Second)
		_ = locks.Close(context.Background())
	})
	return in
}

// metrics returns every data point the instance reported, keyed
// "name{attr=value,...}" with the attributes' "leasehold." prefix cut, in
// the instance's reader. A histogram's value is its count.
func (in *instance) metrics(t *testing.T) map[string]float64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := in.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	out := make(map[string]float64)
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					out[series(m.Name, p.Attributes)] = float64(p.Value)
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					out[series(m.Name, p.Attributes)] = float64(p.Count)
				}
			default:
				t.Fatalf("%s: unexpected data %T", m.Name, m.Data)
			}
		}
	}
	return out
}

// histogram returns the data point of a histogram with the given series key.
func (in *instance) histogram(t *testing.T, key string) metricdata.HistogramDataPoint[float64] {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := in.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if h, ok := m.Data.(metricdata.Histogram[float64]); ok {
				for _, p := range h.DataPoints {
					if series(m.Name, p.Attributes) == key {
						return p
					}
				}
			}
		}
	}
	t.Fatalf("no histogram %s", key)
	return metricdata.HistogramDataPoint[float64]{}
}

func series(name string, attrs attribute.Set) string {
	var parts []string
	for _, kv := range attrs.ToSlice() {
		parts = append(parts, strings.TrimPrefix(string(kv.Key), "leasehold.")+"="+kv.Value.Emit())
	}
	return name + "{" + strings.Join(parts, ",") + "}"
}

// checkMetrics fails the test unless got holds exactly want.
func checkMetrics(t *testing.T, who string, got, want map[string]float64) {
	t.Helper()
	if maps.Equal(got, want) {
		return
	}
	var diff []string
	for _, k := range slices.Sorted(maps.Keys(with(got, want))) {
		g, gok := got[k]
		w, wok := want[k]
		if g != w || gok != wok {
			diff = append(diff, fmt.Sprintf("%s: got %v (%v), want %v (%v)", k, g, gok, w, wok))
		}
	}
	t.Fatalf("%s's metrics differ:\n\t%s", who, strings.Join(diff, "\n\t"))
}

// countingStore counts what the store answered, by operation, key and
// outcome: the truth the metrics must agree with. It can also fail the
// renewals of one key.
type countingStore struct {
	core.LockStore

	mu        sync.Mutex
	counts    map[string]int // "op key outcome"
	failRenew string         // a key whose renewals fail
}

var errStoreDown = errors.New("store unreachable")

func (s *countingStore) count(op, key string, ok bool, err error, yes string) {
	outcome := "refused"
	switch {
	case err != nil:
		outcome = "error"
	case ok:
		outcome = yes
	case op == "acquire":
		outcome = "held"
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.counts[op+" "+key+" "+outcome]++
}

func (s *countingStore) Acquire(ctx context.Context, key, owner string, ttl time.Duration) (int64, bool, error) {
	token, ok, err := s.LockStore.Acquire(ctx, key, owner, ttl)
	s.count("acquire", key, ok, err, "acquired")
	return token, ok, err
}

func (s *countingStore) Renew(ctx context.Context, key, owner string, ttl time.Duration) (ok bool, err error) {
	s.mu.Lock()
	fail := key == s.failRenew
	s.mu.Unlock()
	if fail {
		err = errStoreDown
	} else {
		ok, err = s.LockStore.Renew(ctx, key, owner, ttl)
	}
	s.count("renew", key, ok, err, "renewed")
	return ok, err
}

func (s *countingStore) Release(ctx context.Context, key, owner string) (bool, error) {
	ok, err := s.LockStore.Release(ctx, key, owner)
	s.count("release", key, ok, err, "released")
	return ok, err
}

func (s *countingStore) failRenewals(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failRenew = key
}

// expected returns the store-call metrics the counts imply: attempts and
// renewals by kind and outcome, and the store duration histogram's count
// by operation and outcome. kindOf names the kind of each key.
func (s *countingStore) expected(kindOf func(key string) string) map[string]float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]float64)
	for k, n := range s.counts {
		f := strings.Fields(k)
		op, key, outcome := f[0], f[1], f[2]
		out["leasehold.store.duration{outcome="+outcome+",store.operation="+op+"}"] += float64(n)
		switch op {
		case "acquire":
			out["leasehold.acquire.attempts{lock.kind="+kindOf(key)+",outcome="+outcome+"}"] += float64(n)
		case "renew":
			out["leasehold.renewals{lock.kind="+kindOf(key)+",outcome="+outcome+"}"] += float64(n)
		}
	}
	return out
}

// calls returns how many calls of op on key were answered with outcome.
func (s *countingStore) calls(op, key, outcome string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counts[op+" "+key+" "+outcome]
}

// with returns the entries of all ms, later ones replacing earlier ones.
func with(ms ...map[string]float64) map[string]float64 {
	out := make(map[string]float64)
	for _, m := range ms {
		maps.Copy(out, m)
	}
	return out
}

// lostAtZero are the loss series every instrumented instance reports from
// the start.
var lostAtZero = func() map[string]float64 {
	out := make(map[string]float64)
	for _, kind := range []string{"lock", "job_lease", "run_lock", "leadership"} {
		for _, reason := range []string{"refused", "deadline"} {
			out["leasehold.lease.lost{lock.kind="+kind+",loss.reason="+reason+"}"] = 0
		}
	}
	return out
}()

// spanNamed returns the ended spans called name, in the order they ended.
func (in *instance) spansNamed(name string) tracetest.SpanStubs {
	var out tracetest.SpanStubs
	for _, s := range in.spans.GetSpans() {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

// children returns the spans whose parent is span.
func (in *instance) children(span tracetest.SpanStub) []string {
	var out []string
	for _, s := range in.spans.GetSpans() {
		if s.Parent.SpanID() == span.SpanContext.SpanID() {
			out = append(out, s.Name+" "+attr(s.Attributes, "leasehold.outcome"))
		}
	}
	return out
}

// attr returns the value of attribute key in attrs, or "".
func attr(attrs []attribute.KeyValue, key string) string {
	for _, kv := range attrs {
		if string(kv.Key) == key {
			return kv.Value.Emit()
		}
	}
	return ""
}

// total returns how many calls the store answered.
func (s *countingStore) total() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.counts {
		n += c
	}
	return n
}
