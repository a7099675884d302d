package integration_test

import (
	"database/sql"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"

	"github.com/leasehold/leasehold/conformance"
	"github.com/leasehold/leasehold/conformance/ginkgokit"
	"github.com/leasehold/leasehold/core"
	sqlstore "github.com/leasehold/leasehold/drivers/sql"
	"github.com/leasehold/leasehold/internal/testserver"
)

// TestSuite runs the conformance kit on every dialect against a real server
// (and SQLite in a file shared by 16 connections), with 32 callers per
// race on a pool of 32 connections, so races overlap on the server: once
// through sqlstore.New, once through an executor written in this package in
// the Question placeholder style. `go test -ginkgo.label-filter=postgres`
// picks one server.
func TestSuite(t *testing.T) { testserver.RunSuite(t, "sqlstore") }

var _ = Describe("sqlstore", func() {
	for _, b := range backends {
		conformanceOn(b, "database/sql", func(t testing.TB, db *sql.DB) *sqlstore.Store { return plain(t, db, b.dialect) })
		conformanceOn(b, "a ? executor", func(t testing.TB, db *sql.DB) *sqlstore.Store { return question(t, db, b.dialect) })
	}
})

// conformanceOn runs the kit on b's server, through the stores open makes:
// the database and its pool are created, and migrated, once for the
// container; each store the kit asks for (one per case, racing caller and
// instance) is a new Store over that pool. A pool per store would open
// more connections than the servers allow: the kit may hold a hundred
// stores at once.
func conformanceOn(b backend, through string, open func(testing.TB, *sql.DB) *sqlstore.Store) {
	Describe(b.name+" through "+through, Label(b.label), Ordered, func() {
		var db *sql.DB
		BeforeAll(func() {
			db = b.open(GinkgoTB())
			migrate(GinkgoTB(), open(GinkgoTB(), db))
		})
		opts := conformance.Options{Callers: 32}
		if isSQLite(b.dialect) {
			// SQLite runs one writer at a time, and modernc's SQLite is
			// several times slower under the race detector: a call queued
			// behind 31 others can take over a second, and the expiry
			// cases need calls well within TTL/3.
			opts.TTL = 6 * time.Second
		}
		ginkgokit.Specs(func(t testing.TB) core.LockStore { return open(t, db) }, opts)
	})
}
