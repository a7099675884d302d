package integration

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/uptrace/bun"

	"github.com/leasehold/leasehold/conformance"
	"github.com/leasehold/leasehold/conformance/ginkgokit"
	"github.com/leasehold/leasehold/core"
	bunstore "github.com/leasehold/leasehold/drivers/bun"
	sqlstore "github.com/leasehold/leasehold/drivers/sql"
)

// server is one backend's database, created once for the specs of its
// container.
type server struct {
	backend
	dsn string
	// shared is a store on the migrated default table, over sharedDB.
	shared   *bunstore.Store
	sharedDB *bun.DB
}

// store opens a pool on the server's database and a store over it, both
// gone when t ends.
func (s *server) store(t testing.TB, opts ...sqlstore.Option) (*bunstore.Store, *bun.DB) {
	t.Helper()
	db := s.open(t, s.dsn)
	st, err := bunstore.New(db, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return st, db
}

// ref returns a sqlstore.Store over database/sql on the server's database:
// bound arguments, no client-side formatting.
func (s *server) ref(t testing.TB, opts ...sqlstore.Option) *sqlstore.Store {
	t.Helper()
	st, err := sqlstore.New(s.reference(t, s.dsn), s.dialect, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func specContext() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	DeferCleanup(cancel)
	return ctx
}

var _ = func() bool {
	for _, b := range backends {
		Describe(b.name, Label(b.label), Ordered, ContinueOnFailure, func() {
			s := &server{backend: b}
			BeforeAll(func() {
				t := GinkgoTB()
				s.dsn = s.database(t)
				s.shared, s.sharedDB = s.store(t)
				Expect(s.shared.Migrate(specContext())).To(Succeed())
			})
			Describe("conformance kit", func() { conformanceSpecs(s) })
			Describe("query hooks", func() { hookSpecs(s) })
			Describe("keys", func() { keySpecs(s) })
			Describe("handles", func() { handleSpecs(s) })
			Describe("migrations", func() { migrationSpecs(s) })
		})
	}
	return true
}()

// conformanceSpecs runs the kit with 32 racing callers. Each store the kit
// asks for (one per case, racing caller and instance) is on a bun.DB of its
// own, a new client over the shared store's pool: a pool per store would
// open more connections than the servers allow, since the kit may hold a
// hundred stores at once.
func conformanceSpecs(s *server) {
	opts := conformance.Options{
		Callers: 32,
		ResetTokens: func(ctx context.Context) error {
			return s.shared.ResetTokens(ctx)
		},
	}
	if s.dialect.String() == sqlstore.SQLite.String() {
		// SQLite runs one writer at a time, and modernc's SQLite is several
		// times slower under the race detector: a call queued behind 31
		// others can take over a second, and the expiry cases need calls
		// well within TTL/3.
		opts.TTL = 6 * time.Second
	}
	ginkgokit.Specs(func(t testing.TB) core.LockStore {
		st, err := bunstore.New(bun.NewDB(s.sharedDB.DB, s.bunDialect()))
		if err != nil {
			t.Fatal(err)
		}
		return st
	}, opts)
}

// handleSpecs: what New accepts and refuses, and what an operation on a
// database without the table says.
func handleSpecs(s *server) {
	It("runs over a bun.Conn", func() {
		ctx := specContext()
		_, db := s.store(GinkgoTB())
		conn, err := db.Conn(ctx)
		Expect(err).NotTo(HaveOccurred())
		defer conn.Close()
		for _, h := range []bun.IDB{conn, &conn} {
			st, err := bunstore.New(h)
			Expect(err).NotTo(HaveOccurred())
			token, ok, err := st.Acquire(ctx, "conn", "owner", time.Minute)
			Expect(err).NotTo(HaveOccurred())
			Expect(ok).To(BeTrue())
			Expect(token).To(BeNumerically(">", 0))
			Expect(st.Renew(ctx, "conn", "owner", time.Minute)).To(BeTrue())
			Expect(st.Release(ctx, "conn", "owner")).To(BeTrue())
		}
	})

	It("refuses a bun.Tx, whose locks would exclude nobody", func() {
		ctx := specContext()
		_, db := s.store(GinkgoTB())
		tx, err := db.BeginTx(ctx, nil)
		Expect(err).NotTo(HaveOccurred())
		defer tx.Rollback() //nolint:errcheck // nothing to undo
		for _, h := range []bun.IDB{tx, &tx} {
			_, err := bunstore.New(h)
			Expect(err).To(MatchError(sqlstore.ErrTransaction))
			Expect(err).To(MatchError(core.ErrInvalidArgument))
		}
	})

	It("says the table is missing, with every driver's errors", func() {
		ctx := specContext()
		st, _ := s.store(GinkgoTB(), sqlstore.WithTable("never_migrated"))
		_, _, err := st.Acquire(ctx, "k", "o", time.Minute)
		Expect(err).To(MatchError(sqlstore.ErrNotMigrated))
		_, err = st.Renew(ctx, "k", "o", time.Minute)
		Expect(err).To(MatchError(sqlstore.ErrNotMigrated))
		_, err = st.Release(ctx, "k", "o")
		Expect(err).To(MatchError(sqlstore.ErrNotMigrated))
		_, err = st.List(ctx, "")
		Expect(err).To(MatchError(sqlstore.ErrNotMigrated))
	})
}
