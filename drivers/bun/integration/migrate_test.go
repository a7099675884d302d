package integration

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/uptrace/bun/migrate"

	bunstore "github.com/leasehold/leasehold/drivers/bun"
	sqlstore "github.com/leasehold/leasehold/drivers/sql"
)

func migrationSpecs(s *server) {
	It("run up and down in bun's migrator, in order with the application's", func() {
		ctx := specContext()
		table := sqlstore.WithTable("migrated_locks")
		st, db := s.store(GinkgoTB(), table)

		// The application's migrations before and after the locks table's;
		// the later one finds the table there.
		migrations := migrate.NewMigrations()
		nop := func(context.Context, *migrate.Migrator, *migrate.Migration) error { return nil }
		migrations.Add(migrate.Migration{Name: "20250101000000", Comment: "app_before", Up: nop, Down: nop})
		migrations.Add(migrate.Migration{Name: "20251231000000", Comment: "app_after", Down: nop,
			Up: func(ctx context.Context, m *migrate.Migrator, _ *migrate.Migration) error {
				_, err := m.DB().ExecContext(ctx, "SELECT COUNT(*) FROM migrated_locks")
				return err
			},
		})
		Expect(bunstore.RegisterMigration(migrations, "20250601120000", table)).To(Succeed())
		m := migrate.NewMigrator(db, migrations)
		Expect(m.Init(ctx)).To(Succeed())

		expectMissing(ctx, st)
		group, err := m.Migrate(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(names(group.Migrations)).To(Equal([]string{"20250101000000", "20250601120000", "20251231000000"}))
		expectWorks(ctx, st)

		group, err = m.Rollback(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(group.Migrations).To(HaveLen(3))
		expectMissing(ctx, st)

		// Up again after down: the down migration left nothing behind.
		_, err = m.Migrate(ctx)
		Expect(err).NotTo(HaveOccurred())
		expectWorks(ctx, st)
	})

	It("are the same statements as Migrate's, and idempotent", func() {
		ctx := specContext()
		table := sqlstore.WithTable("migrated_twice")
		st, db := s.store(GinkgoTB(), table)
		up, down := bunstore.MigrationFuncs(table)
		Expect(up(ctx, db)).To(Succeed())
		Expect(up(ctx, db)).To(Succeed())
		Expect(st.Migrate(ctx)).To(Succeed())
		expectWorks(ctx, st)
		Expect(down(ctx, db)).To(Succeed())
		expectMissing(ctx, st)
		Expect(down(ctx, db)).To(Succeed())
	})
}

func expectMissing(ctx context.Context, st *bunstore.Store) {
	GinkgoHelper()
	_, _, err := st.Acquire(ctx, "migrated", "owner", time.Minute)
	Expect(err).To(MatchError(sqlstore.ErrNotMigrated))
}

func expectWorks(ctx context.Context, st *bunstore.Store) {
	GinkgoHelper()
	_, ok, err := st.Acquire(ctx, "migrated", "owner", time.Minute)
	Expect(err).NotTo(HaveOccurred())
	Expect(ok).To(BeTrue())
	Expect(st.Release(ctx, "migrated", "owner")).To(BeTrue())
}

func names(ms migrate.MigrationSlice) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.Name)
	}
	return out
}
