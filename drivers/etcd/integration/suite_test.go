package integration

import (
	"crypto/rand"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"

	"github.com/leasehold/leasehold/conformance"
	"github.com/leasehold/leasehold/conformance/ginkgokit"
	"github.com/leasehold/leasehold/core"
	etcdstore "github.com/leasehold/leasehold/drivers/etcd"
	"github.com/leasehold/leasehold/internal/testserver"
	"github.com/leasehold/leasehold/internal/testserver/etcdserver"
)

// kitTTL: the store grants leases of ttl + 100ms rounded up to whole
// seconds (3s here), and etcd's leader frees them on its scan (every
// 500ms) through raft, so a lock is free between ttl and ttl + the store's
// declared expiry precision (Store.ExpiryPrecision): the kit's checks that
// a lock is gone, its race cases and its history judge wait that much
// longer, and its checks that a lock is held do not move. token-floor-after-
// reset accepts the store's core.ErrTokensNotResettable and checks that
// tokens grow across release, expiry and writes instead (see docs/etcd.md).
const kitTTL = 2900 * time.Millisecond

// TestSuite runs the conformance kit on etcd, with 32 callers per race,
// every case included.
func TestSuite(t *testing.T) { testserver.RunSuite(t, "etcdstore") }

var _ = Describe("etcd", Label("etcd"), Ordered, func() {
	var endpoints []string
	var prefix string
	BeforeAll(func() {
		endpoints = etcdserver.Endpoints(GinkgoTB())
		prefix = "leasehold-kit-" + rand.Text()[:8] + "/"
	})
	// Each store is on a client of its own, as each instance of a service
	// has one.
	ginkgokit.Specs(func(t testing.TB) core.LockStore {
		return etcdstore.NewWithOptions(newClient(t, endpoints), etcdstore.Options{Prefix: prefix})
	}, conformance.Options{Callers: 32, TTL: kitTTL})
})
