package integration_test

import (
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"

	"github.com/leasehold/leasehold/conformance"
	"github.com/leasehold/leasehold/core"
	sqlitestore "github.com/leasehold/leasehold/drivers/sqlite"
	"github.com/leasehold/leasehold/internal/testserver"
)

// TestSuite runs the conformance kit on the embedded default as shipped:
// Open on a file, and on ":memory:", with 32 callers per race.
func TestSuite(t *testing.T) { testserver.RunSuite(t, "sqlitestore") }

var _ = Describe("sqlitestore", Label("sqlite"), func() {
	for _, where := range []string{"file", "memory"} {
		Describe("Open on a "+where, Ordered, func() {
			var s *sqlitestore.Store
			BeforeAll(func() {
				path := ":memory:"
				if where == "file" {
					path = filepath.Join(GinkgoT().TempDir(), "locks.db")
				}
				var err error
				if s, err = sqlitestore.Open(path); err != nil {
					Fail(err.Error())
				}
				DeferCleanup(s.Close)
			})
			conformance.Specs(func(testing.TB) core.LockStore { return s }, conformance.Options{
				Callers: 32,
				// modernc's SQLite is several times slower under the race
				// detector, and 32 callers queue for the one connection.
				TTL: 6 * time.Second,
			})
		})
	}
})
