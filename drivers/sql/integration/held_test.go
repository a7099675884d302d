package integration_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/leasehold/leasehold/core/coretest"
	sqlstore "github.com/leasehold/leasehold/drivers/sql"
	"github.com/leasehold/leasehold/internal/testserver"
)

// heldLeases is how many leases the instances of BenchmarkHeld10k hold.
const heldLeases = 10_000

// BenchmarkHeld10k/periods: per dialect, two instances each holding 10,000 leases
// (ttl 30s) on the server, one renewing in batches ("batch"), one lease by
// lease ("single"); each iteration moves both through one renewal period,
// in turn, and reports per period the statements each sent (BEGIN and
// COMMIT included), the process's CPU time and allocations, and the
// latency of the slowest renewal (see testserver.Held).
func BenchmarkHeld10k(b *testing.B) {
	for _, be := range backends {
		b.Run(be.name, func(b *testing.B) {
			db := benchOpen(b, be)
			store := func(n *atomic.Int64) *sqlstore.Store {
				s, err := sqlstore.NewWithExecutor(benchExecutor{dbExecutor: dbExecutor{q: db, db: db}, n: n}, be.dialect)
				if err != nil {
					b.Fatal(err)
				}
				if err := s.Migrate(ctxT(b)); err != nil {
					b.Fatal(err)
				}
				return s
			}
			b.Run("periods", func(b *testing.B) {
				batchCalls, singleCalls := new(atomic.Int64), new(atomic.Int64)
				batch := coretest.HoldMany(b, store(batchCalls), "batch", heldLeases)
				single := coretest.HoldMany(b, coretest.LeaseByLease(store(singleCalls)), "single", heldLeases)
				testserver.Held(b, "stmts/period",
					testserver.HeldRun{Name: "batch", Period: batch.Period, Calls: batchCalls},
					testserver.HeldRun{Name: "single", Period: single.Period, Calls: singleCalls})
				if n, m := batch.Lost(), single.Lost(); n+m > 0 {
					b.Fatalf("%d batch and %d single locks lost", n, m)
				}
			})
			// steady: the leases taken one by one over 10s, as a busy
			// service takes them, then held; the statements of every
			// period are logged.
			b.Run("steady", func(b *testing.B) {
				calls := new(atomic.Int64)
				h := coretest.HoldSteadily(b, store(calls), "steady", heldLeases, 10*time.Second, calls.Load)
				for b.Loop() {
					h.Period()
				}
				h.Report(b, "stmts")
			})
		})
	}
}
