package integration

import (
	"context"
	"fmt"
	"github.com/redis/rueidis"
	"testing"
	"time"

	"github.com/leasehold/leasehold/core"
	"github.com/leasehold/leasehold/core/coretest"
	rueidisstore "github.com/leasehold/leasehold/drivers/rueidis"
	"github.com/leasehold/leasehold/internal/testserver"
)

// TestBatchRoundTrips: a batch of leases spread over every slot renews in
// one pipeline, and answers each lease as Renew would.
func TestBatchRoundTrips(t *testing.T) {
	for _, srv := range servers {
		t.Run(srv.name, func(t *testing.T) {
			url, prefix := srv.get(t)
			c := &counting{Client: newClient(t, url)}
			s, err := rueidisstore.New(c, rueidisstore.WithPrefix(prefix))
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			var leases []core.Lease
			for i := range 60 {
				key := fmt.Sprintf("k%d", i)
				if _, ok, err := s.Acquire(ctx, key, "a", time.Minute); err != nil || !ok {
					t.Fatal(ok, err)
				}
				// Renew once, so every node has the renewal script.
				if ok, err := s.Renew(ctx, key, "a", time.Minute); err != nil || !ok {
					t.Fatal(ok, err)
				}
				owner := "a"
				if i%3 == 1 {
					owner = "stranger"
				}
				leases = append(leases, core.Lease{Key: key, Owner: owner, TTL: time.Minute})
			}
			if ok, err := s.Release(ctx, "k2", "a"); err != nil || !ok {
				t.Fatal(ok, err)
			}
			c.n.Store(0)
			renewed, err := s.RenewBatch(ctx, leases)
			if err != nil {
				t.Fatal(err)
			}
			// One pipeline on a standalone server; on a Cluster, one call
			// per lease, all at once (rueidis pipelines them per node), so
			// that a dead node fails only its own leases.
			want := int64(1)
			if c.Mode() == rueidis.ClientModeCluster {
				want = int64(len(leases))
			}
			if n := c.n.Load(); n != want {
				t.Errorf("RenewBatch of %d leases: %d client calls, want %d", len(leases), n, want)
			}
			for i, ok := range renewed {
				if want := i%3 != 1 && i != 2; ok != want {
					t.Errorf("lease %d (%q by %q): renewed %v, want %v", i, leases[i].Key, leases[i].Owner, ok, want)
				}
			}
		})
	}
}

// BenchmarkHeld10k/periods: two instances each holding 10,000 leases (ttl
// 30s) in Redis, one renewing in batches ("batch"), one lease by lease ("single");
// each iteration moves both through one renewal period and reports the
// client calls each made (a batch is one pipeline: one round trip per
// node), the process's CPU time and allocations, and the latency of the
// slowest renewal (see testserver.Held).
func BenchmarkHeld10k(b *testing.B) {
	const leases = 10_000
	for _, srv := range servers {
		b.Run(srv.name, func(b *testing.B) {
			url, prefix := srv.get(b)
			batchCalls, singleCalls := &counting{Client: newClient(b, url)}, &counting{Client: newClient(b, url)}
			open := func(c *counting) core.LockStore {
				s, err := rueidisstore.New(c, rueidisstore.WithPrefix(prefix))
				if err != nil {
					b.Fatal(err)
				}
				return s
			}
			b.Run("periods", func(b *testing.B) {
				batch := coretest.HoldMany(b, open(batchCalls), "batch", leases)
				single := coretest.HoldMany(b, coretest.LeaseByLease(open(singleCalls)), "single", leases)
				testserver.Held(b, "calls/period",
					testserver.HeldRun{Name: "batch", Period: batch.Period, Calls: &batchCalls.n},
					testserver.HeldRun{Name: "single", Period: single.Period, Calls: &singleCalls.n})
				if n, m := batch.Lost(), single.Lost(); n+m > 0 {
					b.Fatalf("%d batch and %d single locks lost", n, m)
				}
			})
			// steady: the leases taken one by one over 10s, as a busy
			// service takes them, then held; the client calls (one
			// pipeline per batch) of every period are logged.
			b.Run("steady", func(b *testing.B) {
				calls := &counting{Client: newClient(b, url)}
				h := coretest.HoldSteadily(b, open(calls), "steady", leases, 10*time.Second, calls.n.Load)
				for b.Loop() {
					h.Period()
				}
				h.Report(b, "calls")
			})
		})
	}
}
