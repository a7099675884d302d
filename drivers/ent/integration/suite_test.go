package integration

import (
	"context"
	"testing"

	"entgo.io/ent/dialect"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/leasehold/leasehold/conformance"
	"github.com/leasehold/leasehold/core"
	entstore "github.com/leasehold/leasehold/drivers/ent"
	"github.com/leasehold/leasehold/drivers/ent/integration/example/ent"
	"github.com/leasehold/leasehold/internal/testserver"
)

func TestSuite(t *testing.T) { testserver.RunSuite(t, "entstore") }

var _ = Describe("entstore", func() {
	for _, s := range servers {
		Describe(s.label, Label(s.label), Ordered, ContinueOnFailure, func() {
			// One database per server, whose tables the application's ent
			// migration created, leasehold's with them.
			var dsn string
			BeforeAll(func(ctx SpecContext) {
				dsn = s.database(GinkgoTB())
				Expect(migrate(ctx, s.open(GinkgoTB(), dsn))).To(Succeed())
			})
			options := conformance.Options{
				Callers: 32,
				TTL:     s.ttl,
				// Any store on the database resets the one token source.
				ResetTokens: func(ctx context.Context) error {
					store, err := entstore.New(s.open(GinkgoTB(), dsn))
					if err != nil {
						return err
					}
					return store.ResetTokens(ctx)
				},
			}

			Describe("New, on the application's driver", func() {
				conformance.Specs(func(t testing.TB) core.LockStore {
					store, err := entstore.New(s.open(t, dsn))
					if err != nil {
						t.Fatal(err)
					}
					return store
				}, options)
			})

			// NewFromClient sends the statements New sends (debugSpecs), so
			// the kit runs on it where its transactions matter most: MySQL,
			// whose acquire is one.
			if s.dialect == dialect.MySQL {
				Describe("NewFromClient, on the application's client", func() {
					conformance.Specs(func(t testing.TB) core.LockStore {
						client := ent.NewClient(ent.Driver(s.open(t, dsn)))
						store, err := entstore.NewFromClient(client, s.dialect)
						if err != nil {
							t.Fatal(err)
						}
						return store
					}, options)
				})
			}

			debugSpecs(s, func() string { return dsn })
			migrationSpecs(s)
		})
	}
})
