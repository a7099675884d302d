package integration_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	"gorm.io/gorm"

	"github.com/leasehold/leasehold/conformance"
	"github.com/leasehold/leasehold/conformance/ginkgokit"
	"github.com/leasehold/leasehold/core"
	"github.com/leasehold/leasehold/internal/testserver"
)

// TestSuite runs the conformance kit through GORM against a real server
// per dialector (and SQLite in a file, through both SQLite dialectors),
// with 32 callers per race on a pool of 32 connections, so races overlap on
// the server. `go test -ginkgo.label-filter=sqlite` picks one server.
func TestSuite(t *testing.T) { testserver.RunSuite(t, "gormstore") }

var _ = Describe("gormstore", func() {
	for _, b := range backends {
		Describe(b.name, Label(b.label), Ordered, func() {
			var db *gorm.DB
			BeforeAll(func() {
				db = open(GinkgoTB(), b, nil)
				migrated(GinkgoTB(), db)
			})
			// The kit sends the token source back with the store's own
			// ResetTokens (a conformance.TokenResetter).
			opts := conformance.Options{Callers: 32, TTL: b.ttl}
			// Each store the kit asks for is a new Store over the shared
			// *gorm.DB, as each instance of a service would have.
			ginkgokit.Specs(func(t testing.TB) core.LockStore { return newStore(t, db) }, opts)
		})
	}
})
