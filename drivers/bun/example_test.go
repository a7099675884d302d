package bunstore_test

import (
	"context"
	"log"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/migrate"

	"github.com/leasehold/leasehold/core"
	bunstore "github.com/leasehold/leasehold/drivers/bun"
)

// db is the application's bun handle, for example
// bun.NewDB(sql.OpenDB(pgdriver.NewConnector(pgdriver.WithDSN(dsn))), pgdialect.New()).
var db *bun.DB

// The locks live in the application's database, and their statements go
// through bun like every other query. This example needs a server; the
// integration tests of this module run one against SQLite.
func Example() {
	ctx := context.Background()
	store, err := bunstore.New(db)
	if err != nil {
		log.Fatal(err)
	}
	if err := store.Migrate(ctx); err != nil {
		log.Fatal(err)
	}
	locks, err := core.New(store)
	if err != nil {
		log.Fatal(err)
	}
	defer locks.Close(ctx)

	err = locks.WithLock(ctx, "invoice-export", func(ctx context.Context) error {
		// Runs on one instance at a time; ctx ends if the lock is lost.
		return nil
	})
	if err != nil {
		log.Print(err)
	}
}

// The locks table is one more migration among the application's, run by
// bun's migrator.
func ExampleRegisterMigration() {
	ctx := context.Background()
	migrations := migrate.NewMigrations()
	if err := bunstore.RegisterMigration(migrations, "20250601120000"); err != nil {
		log.Fatal(err)
	}
	migrator := migrate.NewMigrator(db, migrations)
	if err := migrator.Init(ctx); err != nil {
		log.Fatal(err)
	}
	if _, err := migrator.Migrate(ctx); err != nil {
		log.Fatal(err)
	}
}

// In a migration file of the application's own, named like
// 20250601120000_leasehold_locks.go, bun takes the migration's name from
// the file's, and runs its BeforeMigration and AfterMigration hooks around
// it.
func ExampleMigrationFuncs() {
	migrations := migrate.NewMigrations() // the application's collection
	migrations.MustRegister(bunstore.MigrationFuncs())
}
