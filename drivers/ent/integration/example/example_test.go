package example_test

import (
	"context"
	"database/sql"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"slices"
	"time"

	atlasmigrate "ariga.io/atlas/sql/migrate"
	"entgo.io/ent/dialect"
	entsql "entgo.io/ent/dialect/sql"
	"entgo.io/ent/dialect/sql/schema"
	_ "modernc.org/sqlite"

	"github.com/leasehold/leasehold/core"
	entstore "github.com/leasehold/leasehold/drivers/ent"
	"github.com/leasehold/leasehold/drivers/ent/integration/example/ent"
	"github.com/leasehold/leasehold/drivers/ent/integration/example/ent/migrate"
)

// The application's ent client and leasehold share one driver: one
// migration creates the invoices table and leasehold's, and each invoice
// is written under the lock of the export, with its fencing token.
func Example() {
	dir, err := os.MkdirTemp("", "entstore-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "app.db")+"?_pragma=foreign_keys(1)&_pragma=busy_timeout(5000)")
	if err != nil {
		log.Fatal(err)
	}
	drv := entsql.OpenDB(dialect.SQLite, db)
	client := ent.NewClient(ent.Driver(drv))
	defer client.Close()
	ctx := context.Background()

	// leasehold's tables go into the application's migration.
	schemaOfLocks, err := entstore.NewSchema(dialect.SQLite, "")
	if err != nil {
		log.Fatal(err)
	}
	if err := client.Schema.Create(ctx, schemaOfLocks.MigrateOption()); err != nil {
		log.Fatal(err)
	}

	store, err := entstore.New(drv)
	if err != nil {
		log.Fatal(err)
	}
	locks, err := core.New(store)
	if err != nil {
		log.Fatal(err)
	}
	defer locks.Close(ctx)

	for _, number := range []string{"2025-0001", "2025-0002"} {
		err := locks.WithLock(ctx, "invoice-export", func(ctx context.Context) error {
			token := core.LockFromContext(ctx).Token()
			inv, err := client.Invoice.Create().SetNumber(number).SetToken(token).Save(ctx)
			if err != nil {
				return err
			}
			fmt.Println("invoice", inv.Number, "written under token", inv.Token)
			return nil
		})
		if err != nil {
			log.Fatal(err)
		}
	}
	// Output:
	// invoice 2025-0001 written under token 1
	// invoice 2025-0002 written under token 2
}

// Code that is handed the client, not its driver, builds the store from
// the client (generated with --feature sql/execquery) and names the
// dialect.
func Example_fromClient() {
	db, err := sql.Open("sqlite", "file:client?mode=memory&_pragma=foreign_keys(1)")
	if err != nil {
		log.Fatal(err)
	}
	db.SetMaxOpenConns(1) // each connection to an in-memory database is a database of its own
	client := ent.NewClient(ent.Driver(entsql.OpenDB(dialect.SQLite, db)))
	defer client.Close()
	ctx := context.Background()

	store, err := entstore.NewFromClient(client, dialect.SQLite)
	if err != nil {
		log.Fatal(err)
	}
	if err := store.Migrate(ctx); err != nil {
		log.Fatal(err)
	}
	token, ok, err := store.Acquire(ctx, "reports", "worker-1", 30*time.Second)
	fmt.Println("worker-1 acquires:", token, ok, err)
	_, ok, err = store.Acquire(ctx, "reports", "worker-2", 30*time.Second)
	fmt.Println("worker-2 acquires:", ok, err)
	// Output:
	// worker-1 acquires: 1 true <nil>
	// worker-2 acquires: false <nil>
}

// A versioned migration (the application's migrate/main.go): leasehold's
// tables go beside the application's, and the formatter writes the
// statements ent cannot express into the file that creates them. Run it
// against a dev database, then apply the directory with Atlas.
func Example_versioned() {
	ctx := context.Background()
	dir, err := atlasmigrate.NewLocalDir("ent/migrate/migrations")
	if err != nil {
		log.Fatal(err)
	}
	locks, err := entstore.NewSchema(dialect.Postgres, "")
	if err != nil {
		log.Fatal(err)
	}
	err = schema.Diff(ctx, "postgres://postgres:pass@localhost:5432/dev?sslmode=disable", os.Args[1],
		slices.Concat(migrate.Tables, locks.Tables()),
		schema.WithDir(dir),
		schema.WithMigrationMode(schema.ModeReplay),
		schema.WithDialect(dialect.Postgres),
		schema.WithFormatter(locks.Formatter(atlasmigrate.DefaultFormatter)),
		locks.MigrateOption(),
	)
	if err != nil {
		log.Fatal(err)
	}
}
