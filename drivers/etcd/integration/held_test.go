package integration

import (
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
// turn, and reports per period the requests each client sent (unary calls
// and stream messages: a keep-alive is one), the process's CPU time and
// allocations, and the latency of the slowest renewal (see
// testserver.Held). Against the embedded member the CPU time and
// allocations include the server's; see docs/etcd.md for a member in a
// process of its own.
func BenchmarkHeld10k(b *testing.B) {
	const leases = 10_000
	eps := etcdserver.Endpoints(b)
	b.Run("periods", func(b *testing.B) {
		var batchCalls, singleCalls atomic.Int64
		batch := coretest.HoldMany(b, etcdstore.NewWithOptions(countingClient(b, eps, &batchCalls), etcdstore.Options{Prefix: "held-batch/"}), "batch", leases)
		single := coretest.HoldMany(b, coretest.LeaseByLease(etcdstore.NewWithOptions(countingClient(b, eps, &singleCalls), etcdstore.Options{Prefix: "held-single/"})), "single", leases)
		testserver.Held(b, "reqs/period",
			testserver.HeldRun{Name: "batch", Period: batch.Period, Calls: &batchCalls},
			testserver.HeldRun{Name: "single", Period: single.Period, Calls: &singleCalls})
		if n, m := batch.Lost(), single.Lost(); n+m > 0 {
			b.Fatalf("%d batch and %d single locks lost", n, m)
		}
	})
	// steady: the leases taken a few at a time over 10s, as a busy service
	// takes them, then held; the requests of every period are logged.
	b.Run("steady", func(b *testing.B) {
		var calls atomic.Int64
		h := coretest.HoldSteadily(b, etcdstore.NewWithOptions(countingClient(b, eps, &calls), etcdstore.Options{Prefix: "held-steady/"}), "steady", leases, 10*time.Second, calls.Load)
		for b.Loop() {
			h.Period()
		}
		h.Report(b, "reqs")
	})
}
