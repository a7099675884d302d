package bunstore

import (
	"context"
	"fmt"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/migrate"

	"github.com/leasehold/leasehold/core"
	sqlstore "github.com/leasehold/leasehold/drivers/sql"
)

// RegisterMigration adds the locks table to migrations, bun's collection of
// the application's migrations, under name: digits, like the timestamp a
// bun migration file starts with ("20250601120000"), so that it runs in
// order with the others. Its up migration creates the schema of the
// migrator's dialect, as [sqlstore.Store.Migrate] does (the statements of
// [sqlstore.SchemaSQL]); its down migration drops it ([sqlstore.DropSQL]),
// and with it every lock and every token floor. opts are [New]'s
// ([sqlstore.WithTable]), and must be the ones the Stores use.
//
// bun runs its BeforeMigration and AfterMigration hooks only around
// migrations registered from a migration file of their own; to have them,
// register [MigrationFuncs] in such a file instead.
func RegisterMigration(migrations *migrate.Migrations, name string, opts ...sqlstore.Option) error {
	if migrations == nil {
		return fmt.Errorf("%s: nil *migrate.Migrations: %w", pkg, core.ErrInvalidArgument)
	}
	if !migrationName(name) {
		return fmt.Errorf("%s: migration name %q: want 1 to 14 digits, like bun's migration files (20250601120000): %w", pkg, name, core.ErrInvalidArgument)
	}
	up, down := MigrationFuncs(opts...)
	run := func(f migrate.MigrationFunc) func(context.Context, *migrate.Migrator, *migrate.Migration) error {
		return func(ctx context.Context, m *migrate.Migrator, _ *migrate.Migration) error {
			return f(ctx, m.DB())
		}
	}
	migrations.Add(migrate.Migration{Name: name, Comment: "leasehold_locks", Up: run(up), Down: run(down)})
	return nil
}

// MigrationFuncs returns the up and down migration of the locks table (see
// [RegisterMigration]), for a migration file of the application's own:
//
//	// 20250601120000_leasehold_locks.go
//	func init() {
//		Migrations.MustRegister(bunstore.MigrationFuncs())
//	}
func MigrationFuncs(opts ...sqlstore.Option) (up, down migrate.MigrationFunc) {
	up = func(ctx context.Context, db *bun.DB) error {
		s, err := New(db, opts...)
		if err != nil {
			return err
		}
		return s.Migrate(ctx)
	}
	down = func(ctx context.Context, db *bun.DB) error {
		s, err := New(db, opts...)
		if err != nil {
			return err
		}
		stmts, err := sqlstore.DropSQL(s.Dialect(), s.Table())
		if err != nil {
			return fmt.Errorf("%s: %w", pkg, err)
		}
		for _, q := range stmts {
			if _, err := db.ExecContext(ctx, q); err != nil {
				return fmt.Errorf("%s: drop %s table %s: %w", pkg, s.Dialect(), s.Table(), err)
			}
		}
		return nil
	}
	return up, down
}

// migrationName reports whether name is 1 to 14 digits, the names bun gives
// the migrations of its files.
func migrationName(name string) bool {
	if name == "" || len(name) > 14 {
		return false
	}
	for _, c := range name {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
