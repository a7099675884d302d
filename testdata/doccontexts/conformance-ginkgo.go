// A store's Ginkgo suite, with a helper that starts its server.
package p

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"

	"github.com/leasehold/leasehold/conformance"
	"github.com/leasehold/leasehold/conformance/ginkgokit"
	"github.com/leasehold/leasehold/core"

	"example.com/redisstore"
)

func startRedis(t testing.TB) string { return "" }

var _ = redisstore.Open
var _ = conformance.Options{}
var _ = ginkgokit.Specs
var _ core.LockStore

// BLOCK
