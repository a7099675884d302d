package integration

import (
	"context"
	"slices"
	"time"

	atlasmigrate "ariga.io/atlas/sql/migrate"
	"entgo.io/ent/dialect"
	entsql "entgo.io/ent/dialect/sql"
	"entgo.io/ent/dialect/sql/schema"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	entstore "github.com/leasehold/leasehold/drivers/ent"
	appmigrate "github.com/leasehold/leasehold/drivers/ent/integration/example/ent/migrate"
	sqlstore "github.com/leasehold/leasehold/drivers/sql"
)

// migrationSpecs check leasehold's schema in ent's migrations on s, each on
// fresh databases. (The kit itself runs on tables that ent's automatic
// migration created: see the suite's BeforeAll.)
func migrationSpecs(s server) {
	fresh := func() *entsql.Driver { return s.open(GinkgoTB(), s.database(GinkgoTB())) }
	locks := func() *entstore.Schema {
		GinkgoHelper()
		locks, err := entstore.NewSchema(s.dialect, "")
		Expect(err).NotTo(HaveOccurred())
		return locks
	}

	It("says what is missing before any migration", func(ctx SpecContext) {
		store, err := entstore.New(fresh())
		Expect(err).NotTo(HaveOccurred())
		_, _, err = store.Acquire(ctx, "k", "o", time.Minute)
		Expect(err).To(MatchError(sqlstore.ErrNotMigrated))
		Expect(err.Error()).To(HavePrefix("entstore: "))
	})

	It("ent's automatic migration creates all of the schema, and then has nothing to do", func(ctx SpecContext) {
		drv := fresh()
		Expect(migrate(ctx, drv)).To(Succeed())
		expectSchema(ctx, drv)
		Expect(migrate(ctx, drv)).To(Succeed())
		Expect(diff(ctx, drv, locks())).To(MatchError(atlasmigrate.ErrNoPlan))
	})

	It("ent finds nothing to change in the tables Migrate created", func(ctx SpecContext) {
		drv := fresh()
		store, err := entstore.New(drv)
		Expect(err).NotTo(HaveOccurred())
		Expect(store.Migrate(ctx)).To(Succeed())
		Expect(diff(ctx, drv, locks())).To(MatchError(atlasmigrate.ErrNoPlan))
	})

	It("a versioned migration writes all of the schema in one file, which replays whole", func(ctx SpecContext) {
		locks := locks()
		dir, err := atlasmigrate.NewLocalDir(GinkgoT().TempDir())
		Expect(err).NotTo(HaveOccurred())
		dev := fresh()
		// As an application's migrate/main.go does it, with leasehold's
		// tables beside its own.
		opts := []schema.MigrateOption{
			schema.WithDir(dir),
			schema.WithMigrationMode(schema.ModeReplay),
			schema.WithFormatter(locks.Formatter(atlasmigrate.DefaultFormatter)),
			schema.WithErrNoPlan(true),
			locks.MigrateOption(),
		}
		tables := slices.Concat(appmigrate.Tables, locks.Tables())
		namedDiff := func(name string) error {
			m, err := schema.NewMigrate(dev, opts...)
			if err != nil {
				return err
			}
			return m.NamedDiff(ctx, name, tables...)
		}
		Expect(namedDiff("app")).To(Succeed())
		files, err := dir.Files()
		Expect(err).NotTo(HaveOccurred())
		Expect(files).To(HaveLen(1))
		// Replaying the file on the dev database gives the desired schema.
		Expect(namedDiff("again")).To(MatchError(atlasmigrate.ErrNoPlan))

		// Atlas applies the directory to the database (atlas migrate
		// apply): its SQLite scanner keeps the triggers' bodies whole.
		drv := fresh()
		ex, err := atlasmigrate.NewExecutor(s.atlas(drv), dir, &atlasmigrate.NopRevisionReadWriter{})
		Expect(err).NotTo(HaveOccurred())
		Expect(ex.ExecuteN(ctx, 0)).To(Succeed())
		expectSchema(ctx, drv)
		Expect(diff(ctx, drv, locks)).To(MatchError(atlasmigrate.ErrNoPlan))
	})
}

// diff returns ent's versioned diff of locks' tables against drv's
// database: atlasmigrate.ErrNoPlan if there is nothing to change.
func diff(ctx context.Context, drv dialect.Driver, locks *entstore.Schema) error {
	m, err := schema.NewMigrate(drv, locks.MigrateOption(), schema.WithErrNoPlan(true),
		schema.WithDir(&atlasmigrate.MemDir{}))
	if err != nil {
		return err
	}
	return m.NamedDiff(ctx, "leasehold", locks.Tables()...)
}

// expectSchema checks, on a fresh database, what ent's tables cannot show:
// the token source exists and follows every token written (the sequence
// on PostgreSQL, the counter's row on MySQL, the counter's row and the
// triggers on SQLite), so two new keys get tokens 1 and 2.
func expectSchema(ctx context.Context, drv dialect.Driver) {
	GinkgoHelper()
	store, err := entstore.New(drv)
	Expect(err).NotTo(HaveOccurred())
	for i, key := range []string{"schema:a", "schema:b"} {
		token, ok, err := store.Acquire(ctx, key, "owner", time.Minute)
		Expect(err).NotTo(HaveOccurred())
		Expect(ok).To(BeTrue())
		Expect(token).To(Equal(int64(i+1)), key)
	}
}
