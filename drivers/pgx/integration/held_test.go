package integration_test

import (
	"testing"

	"github.com/leasehold/leasehold/core/coretest"
	"github.com/leasehold/leasehold/internal/testserver"
)

// BenchmarkHeld10k: two instances each holding 10,000 leases (ttl 30s) in
// PostgreSQL through pgx's pool, one renewing in batches ("batch"), one
// lease by lease ("single"); each iteration moves both through one
// renewal period, in turn, and reports per period the round trips each
// sent (pgx's pool sends each statement in one, its cache having prepared
// it), the process's CPU time and allocations, and the latency of the
// slowest renewal (see testserver.Held).
func BenchmarkHeld10k(b *testing.B) {
	const leases = 10_000
	dsn := testserver.Postgres(b) + "&synchronous_commit=off"
	batchCalls, singleCalls := &counter{}, &counter{}
	batch := coretest.HoldMany(b, migrated(b, openPool(b, dsn, batchCalls)), "batch", leases)
	single := coretest.HoldMany(b, coretest.LeaseByLease(migrated(b, openPool(b, dsn, singleCalls))), "single", leases)
	testserver.Held(b, "roundtrips/period",
		testserver.HeldRun{Name: "batch", Period: batch.Period, Calls: &batchCalls.n},
		testserver.HeldRun{Name: "single", Period: single.Period, Calls: &singleCalls.n})
	if n, m := batch.Lost(), single.Lost(); n+m > 0 {
		b.Fatalf("%d batch and %d single locks lost", n, m)
	}
}
