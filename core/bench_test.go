package core_test

import (
	"context"
	"log/slog"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leasehold/leasehold/core"
	"github.com/leasehold/leasehold/core/coretest"
)

// BenchmarkAcquireRelease measures what Locks adds to a store's own acquire
// and release (owner id, validation, token check, context, scheduling), next
// to the raw store calls in the same run, and both in turn in one loop
// ("paired"), which reports their ratio. Keys rotate so that the token map
// and the heap see realistic sizes.
func BenchmarkAcquireRelease(b *testing.B) {
	ctx := context.Background()
	keys := make([]string, 1024)
	for i := range keys {
		keys[i] = "bench:" + strconv.Itoa(i)
	}
	b.Run("locks", func(b *testing.B) {
		l, err := core.New(core.NewMemoryStore(), core.WithLogger(slog.New(slog.DiscardHandler)))
		if err != nil {
			b.Fatal(err)
		}
		defer l.Close(ctx)
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			lk, err := l.Acquire(ctx, keys[i%len(keys)])
			if err != nil {
				b.Fatal(err)
			}
			if err := lk.Release(ctx); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
	b.Run("raw", func(b *testing.B) {
		store := core.NewMemoryStore()
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			key := keys[i%len(keys)]
			if _, ok, err := store.Acquire(ctx, key, "owner", 30*time.Second); !ok || err != nil {
				b.Fatal(ok, err)
			}
			if ok, err := store.Release(ctx, key, "owner"); !ok || err != nil {
				b.Fatal(ok, err)
			}
			i++
		}
	})

	// locks and raw in turn, each timed, in one loop: a drift of the
	// machine hits both alike, so their ratio holds where the separate
	// runs above disagree by more.
	b.Run("paired", func(b *testing.B) {
		l, err := core.New(core.NewMemoryStore(), core.WithLogger(slog.New(slog.DiscardHandler)))
		if err != nil {
			b.Fatal(err)
		}
		defer l.Close(ctx)
		store := core.NewMemoryStore()
		var tl, tr time.Duration
		for i := 0; b.Loop(); i++ {
			key := keys[i%len(keys)]
			t0 := time.Now()
			lk, err := l.Acquire(ctx, key)
			if err != nil {
				b.Fatal(err)
			}
			if err := lk.Release(ctx); err != nil {
				b.Fatal(err)
			}
			t1 := time.Now()
			if _, ok, err := store.Acquire(ctx, key, "owner", 30*time.Second); !ok || err != nil {
				b.Fatal(ok, err)
			}
			if ok, err := store.Release(ctx, key, "owner"); !ok || err != nil {
				b.Fatal(ok, err)
			}
			tl, tr = tl+t1.Sub(t0), tr+time.Since(t1)
		}
		b.ReportMetric(float64(tl)/float64(b.N), "locks-ns/op")
		b.ReportMetric(float64(tr)/float64(b.N), "raw-ns/op")
		b.ReportMetric(float64(tl)/float64(tr), "locks/raw")
	})
}

// BenchmarkHeld10k measures the core's own cost of keeping 10,000 leases:
// each iteration moves an instance that holds them on the memory store
// through one renewal period (ttl/3), in which it renews every one.
// "batch" renews them 1000 to a RenewBatch call, "single" one Renew call
// each. goroutines-grown is the instance's goroutines after the periods
// less before: 0 when it keeps a constant number.
func BenchmarkHeld10k(b *testing.B) {
	for _, tc := range []struct {
		name  string
		store core.LockStore
	}{
		{"batch", core.NewMemoryStore()},
		{"single", coretest.LeaseByLease(core.NewMemoryStore())},
	} {
		b.Run(tc.name, func(b *testing.B) {
			h := coretest.HoldMany(b, tc.store, "held", 10_000)
			before := runtime.NumGoroutine()
			b.ReportAllocs()
			for b.Loop() {
				h.Period()
			}
			if n := h.Lost(); n > 0 {
				b.Fatalf("%d locks lost", n)
			}
			b.ReportMetric(float64(runtime.NumGoroutine()-before), "goroutines-grown")
		})
	}

	// "steady": the 10,000 locks taken one by one over 10s, as a busy
	// service takes them, then held; the store calls of every period are
	// logged, and steady-max-calls is the most of a period from the second
	// after the last acquisition on.
	b.Run("steady", func(b *testing.B) {
		store := &countingStore{BatchRenewer: core.NewMemoryStore()}
		h := coretest.HoldSteadily(b, store, "held", 10_000, 10*time.Second, store.n.Load)
		b.ReportAllocs()
		for b.Loop() {
			h.Period()
		}
		h.Report(b, "calls")
	})
}

// countingStore is the memory store, counting its calls.
type countingStore struct {
	core.BatchRenewer // the memory store
	n                 atomic.Int64
}

func (s *countingStore) store() core.LockStore { return s.BatchRenewer.(core.LockStore) }

func (s *countingStore) Acquire(ctx context.Context, key, owner string, ttl time.Duration) (int64, bool, error) {
	s.n.Add(1)
	return s.store().Acquire(ctx, key, owner, ttl)
}

func (s *countingStore) Renew(ctx context.Context, key, owner string, ttl time.Duration) (bool, error) {
	s.n.Add(1)
	return s.store().Renew(ctx, key, owner, ttl)
}

func (s *countingStore) Release(ctx context.Context, key, owner string) (bool, error) {
	s.n.Add(1)
	return s.store().Release(ctx, key, owner)
}

func (s *countingStore) RenewBatch(ctx context.Context, leases []core.Lease) ([]bool, error) {
	s.n.Add(1)
	return s.BatchRenewer.RenewBatch(ctx, leases)
}
