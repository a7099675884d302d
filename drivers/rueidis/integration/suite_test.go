package integration

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"

	"github.com/leasehold/leasehold/conformance"
	"github.com/leasehold/leasehold/conformance/ginkgokit"
	"github.com/leasehold/leasehold/core"
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
func kit(server func(testing.TB) (string, string)) {
	var url, prefix string
	BeforeAll(func() { url, prefix = server(GinkgoTB()) })
	ginkgokit.Specs(func(t testing.TB) core.LockStore { return newStore(t, url, prefix) }, conformance.Options{Callers: 32})
}

var _ = Describe("standalone Redis", Label("redis"), Ordered, func() {
	kit(testserver.Redis)
})

var _ = Describe("Redis Cluster", Label("redis-cluster"), Ordered, func() {
	kit(testserver.RedisCluster)
})
