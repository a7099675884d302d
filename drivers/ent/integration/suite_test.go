package integration

import (
	"testing"

	"entgo.io/ent/dialect"
	entsql "entgo.io/ent/dialect/sql"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/leasehold/leasehold/conformance"
	"github.com/leasehold/leasehold/conformance/ginkgokit"
	"github.com/leasehold/leasehold/core"
	entstore "github.com/leasehold/leasehold/drivers/ent"
	"github.com/leasehold/leasehold/drivers/ent/integration/example/ent"
	sqlstore "github.com/leasehold/leasehold/drivers/sql"
	"github.com/leasehold/leasehold/internal/testserver"
)

// TestSuite runs, on PostgreSQL, MariaDB and SQLite, the conformance kit
// through ent's driver (32 callers per race on a pool of 32 connections),
// on tables that an application's ent migration created; and the specs of
// Debug, NewFromClient and the migrations. `go test
// -ginkgo.label-filter=sqlite` picks one server.
func TestSuite(t *testing.T) { testserver.RunSuite(t, "entstore") }

var _ = Describe("entstore", func() {
	for _, s := range servers {
		Describe(s.label, Label(s.label), Ordered, ContinueOnFailure, func() {
			// One database per server, whose tables the application's ent
			// migration created, leasehold's with them; one pool of 32
			// connections, which every store of the kit shares (the kit
			// runs its waiting cases at once, and a pool for each would
			// exhaust the server's connections).
			var drv *entsql.Driver
			BeforeAll(func(ctx SpecContext) {
				drv = s.open(GinkgoTB(), s.database(GinkgoTB()))
				Expect(migrate(ctx, drv)).To(Succeed())
			})
			// The kit resets the token source through the store's own
			// ResetTokens.
			options := conformance.Options{Callers: 32, TTL: s.ttl}

			Describe("New, on the application's driver", func() {
				ginkgokit.Specs(func(t testing.TB) core.LockStore {
					store, err := entstore.New(drv)
					if err != nil {
						t.Fatal(err)
					}
					return store
				}, options)
			})

			Describe("NewFromClient, on the application's client", func() {
				ginkgokit.Specs(func(t testing.TB) core.LockStore {
					store, err := entstore.NewFromClient(ent.NewClient(ent.Driver(drv)), s.dialect)
					if err != nil {
						t.Fatal(err)
					}
					return store
				}, options)
			})

			It("refuses the driver of a transaction", func(ctx SpecContext) {
				tx, err := drv.DB().BeginTx(ctx, nil)
				Expect(err).NotTo(HaveOccurred())
				defer tx.Rollback()
				for _, d := range []dialect.Driver{
					entsql.NewDriver(s.dialect, entsql.Conn{ExecQuerier: tx}),
					dialect.Debug(entsql.NewDriver(s.dialect, entsql.Conn{ExecQuerier: tx})),
					dialect.NopTx(drv).(dialect.Driver),
				} {
					_, err := entstore.New(d)
					Expect(err).To(MatchError(sqlstore.ErrTransaction), "%T", d)
				}
			})

			debugSpecs(s, func() *entsql.Driver { return drv })
			migrationSpecs(s)
		})
	}
})
