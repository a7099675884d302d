package integration_test

import (
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"

	"github.com/leasehold/leasehold/conformance"
	"github.com/leasehold/leasehold/conformance/ginkgokit"
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
			var (
				path  = ":memory:"
				first *sqlitestore.Store
			)
			BeforeAll(func() {
				if where == "file" {
					path = filepath.Join(GinkgoT().TempDir(), "locks.db")
				}
				var err error
				if first, err = sqlitestore.Open(path); err != nil {
					Fail(err.Error())
				}
				DeferCleanup(first.Close)
			})
			ginkgokit.Specs(func(t testing.TB) core.LockStore {
				if where == "memory" {
					// Each Open of ":memory:" is a database of its own.
					return first
				}
				// Each store the kit asks for (one per case, racing
				// caller and instance) opens the file again, as the
				// processes of a host sharing it do: one connection
				// each, waiting on SQLite's busy timeout.
				s, err := sqlitestore.Open(path)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { s.Close() })
				return s
			}, conformance.Options{
				Callers: 32,
				// modernc's SQLite is several times slower under the race
				// detector, and 32 callers queue for the one writer.
				TTL: 6 * time.Second,
			})
		})
	}
})
