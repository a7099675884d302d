package integration

import (
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leasehold/leasehold/core/coretest"
	etcdstore "github.com/leasehold/leasehold/drivers/etcd"
	"github.com/leasehold/leasehold/internal/testserver"
	"github.com/leasehold/leasehold/internal/testserver/etcdserver"
)

// BenchmarkHeld10k/periods: two instances each holding 10,000 leases (ttl
// 30s) in etcd, one renewing in batches ("batch": RenewBatch keeps up to
// 1,000 leases alive on one keep-alive stream), one lease by lease
// ("single"); each iteration moves both through one renewal period, in
// turn, and reports per period the round trips each client made (unary
// calls and streams opened: a batch's keep-alives are pipelined on one
// stream) and the requests it sent (a keep-alive is one), the process's
// CPU time and allocations, and the latency of the slowest renewal (see
// testserver.Held). The CPU time and allocations are the test process's
// alone: etcdserver.Endpoints runs the member in a process of its own.
func BenchmarkHeld10k(b *testing.B) {
	const leases = 10_000
	eps := etcdserver.Endpoints(b)
	// Keys of this run only: a server of LEASEHOLD_TEST_ETCD outlives it.
	prefix := "held-" + strconv.FormatInt(time.Now().UnixNano(), 36) + "/"
	b.Run("periods", func(b *testing.B) {
		var batchReqs, batchTrips, singleReqs, singleTrips atomic.Int64
		batch := coretest.HoldMany(b, etcdstore.NewWithOptions(countingClient(b, eps, &batchReqs, &batchTrips), etcdstore.Options{Prefix: prefix}), "batch", leases)
		single := coretest.HoldMany(b, coretest.LeaseByLease(etcdstore.NewWithOptions(countingClient(b, eps, &singleReqs, &singleTrips), etcdstore.Options{Prefix: prefix})), "single", leases)
		reqs := batchReqs.Load()
		singles := singleReqs.Load()
		testserver.Held(b, "roundtrips/period",
			testserver.HeldRun{Name: "batch", Period: batch.Period, Calls: &batchTrips},
			testserver.HeldRun{Name: "single", Period: single.Period, Calls: &singleTrips})
		b.ReportMetric(float64(batchReqs.Load()-reqs)/float64(b.N), "batch-reqs/period")
		b.ReportMetric(float64(singleReqs.Load()-singles)/float64(b.N), "single-reqs/period")
		if n, m := batch.Lost(), single.Lost(); n+m > 0 {
			b.Fatalf("%d batch and %d single locks lost", n, m)
		}
		prefix += "again/" // -count runs this again
	})
	// steady: the leases taken a few at a time over 10s, as a busy service
	// takes them, then held; the round trips of every period are logged.
	b.Run("steady", func(b *testing.B) {
		var reqs, trips atomic.Int64
		h := coretest.HoldSteadily(b, etcdstore.NewWithOptions(countingClient(b, eps, &reqs, &trips), etcdstore.Options{Prefix: prefix}), "steady", leases, 10*time.Second, trips.Load)
		for b.Loop() {
			h.Period()
		}
		h.Report(b, "roundtrips")
		prefix += "again/"
	})
}
