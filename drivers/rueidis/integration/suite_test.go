package integration

import (
	"context"
	"testing"

	. "github.com/onsi/ginkgo/v2"

	"github.com/leasehold/leasehold/conformance"
	"github.com/leasehold/leasehold/core"
	"github.com/leasehold/leasehold/internal/testserver"
)

func TestSuite(t *testing.T) { testserver.RunSuite(t, "rueidisstore") }

// kit runs the conformance kit on the server that server returns (its URL
// and a key prefix), once per container: every case gets a store on a
// client of its own, and 32 callers race on each key.
func kit(server func(testing.TB) (string, string)) {
	var url, prefix string
	BeforeAll(func() { url, prefix = server(GinkgoTB()) })
	var reset func(context.Context) error
	BeforeAll(func() { reset = newStore(GinkgoTB(), url, prefix).ResetTokens })
	conformance.Specs(func(t testing.TB) core.LockStore { return newStore(t, url, prefix) }, conformance.Options{
		Callers:     32,
		ResetTokens: func(ctx context.Context) error { return reset(ctx) },
	})
}

var _ = Describe("standalone Redis", Label("redis"), Ordered, func() {
	kit(testserver.Redis)
})

var _ = Describe("Redis Cluster", Label("redis-cluster"), Ordered, func() {
	kit(testserver.RedisCluster)
})
