package integration

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"

	"github.com/leasehold/leasehold/conformance"
	"github.com/leasehold/leasehold/conformance/ginkgokit"
	"github.com/leasehold/leasehold/core"
	rueidisstore "github.com/leasehold/leasehold/drivers/rueidis"
	"github.com/leasehold/leasehold/internal/testserver"
)

// TestSuite runs the conformance kit on a standalone Redis and on a Redis
// Cluster, with 32 callers per race. `go test -run TestSuite
// -ginkgo.label-filter=redis-cluster` picks one.
func TestSuite(t *testing.T) { testserver.RunSuite(t, "rueidisstore") }

// kit runs the kit on the server that server returns (its URL and a key
// prefix), fetched once for the container. Each store the kit asks for
// (one per case, racing caller and instance) is on a rueidis client of its
// own, as each instance of a service has one: a client is one connection,
// and Redis serves thousands. The kit finds Store.ResetTokens, which
// deletes the floors on the server, so it reaches every store.
//
// On a Cluster, where the store's batch answers per node, the kit's
// Options.FailGroup takes a master out of reach of the kit's clients (see
// nodeFaults) for the batch-partial-answer case; on a standalone server a
// batch is one pipeline, one group, and that case is skipped.
func kit(server func(testing.TB) (string, string), cluster bool) {
	var url, prefix string
	faults := &nodeFaults{}
	BeforeAll(func() {
		url, prefix = server(GinkgoTB())
		faults.admin, faults.prefix = newClient(GinkgoTB(), url), prefix
	})
	opts := conformance.Options{Callers: 32}
	newKitStore := func(t testing.TB) core.LockStore { return newStore(t, url, prefix) }
	if cluster {
		opts.FailGroup = faults.failGroup
		newKitStore = func(t testing.TB) core.LockStore {
			s, err := rueidisstore.New(faults.wrap(newClient(t, url)), rueidisstore.WithPrefix(prefix))
			if err != nil {
				t.Fatal(err)
			}
			return s
		}
	}
	ginkgokit.Specs(newKitStore, opts)
}

var _ = Describe("standalone Redis", Label("redis"), Ordered, func() {
	kit(testserver.Redis, false)
})

var _ = Describe("Redis Cluster", Label("redis-cluster"), Ordered, func() {
	kit(testserver.RedisCluster, true)
})
