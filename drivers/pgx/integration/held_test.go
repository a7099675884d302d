package integration_test

import (
	"testing"
	"time"

	"github.com/leasehold/leasehold/core/coretest"
	"github.com/leasehold/leasehold/internal/testserver"
)

// BenchmarkHeld10k/periods: two instances each holding 10,000 leases (ttl
// 30s) in PostgreSQL through pgx's pool, one renewing in batches ("batch"),
// one lease by lease ("single"); each iteration moves both through one
// renewal period, in turn, and reports per period the round trips each
// sent (pgx's pool sends each statement in one, its cache having prepared
// it), the process's CPU time and allocations, and the latency of the
// slowest renewal (see testserver.Held).
func BenchmarkHeld10k(b *testing.B) {
	const leases = 10_000
	dsn := testserver.Postgres(b) + "&synchronous_commit=off"
	b.Run("periods", func(b *testing.B) {
		batchCalls, singleCalls := &counter{}, &counter{}
		batch := coretest.HoldMany(b, migrated(b, openPool(b, dsn, batchCalls)), "batch", leases)
		single := coretest.HoldMany(b, coretest.LeaseByLease(migrated(b, openPool(b, dsn, singleCalls))), "single", leases)
		testserver.Held(b, "roundtrips/period",
			testserver.HeldRun{Name: "batch", Period: batch.Period, Calls: &batchCalls.n},
			testserver.HeldRun{Name: "single", Period: single.Period, Calls: &singleCalls.n})
		if n, m := batch.Lost(), single.Lost(); n+m > 0 {
			b.Fatalf("%d batch and %d single locks lost", n, m)
		}
	})
	// steady: the leases taken one by one over 10s, as a busy service
	// takes them, then held; the round trips of every period are logged.
	b.Run("steady", func(b *testing.B) {
		calls := &counter{}
		h := coretest.HoldSteadily(b, migrated(b, openPool(b, dsn, calls)), "steady", leases, 10*time.Second, calls.n.Load)
		for b.Loop() {
			h.Period()
		}
		h.Report(b, "roundtrips")
	})
}
