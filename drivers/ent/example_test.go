package entstore_test

import (
	"context"
	"database/sql"
	"log"

	"entgo.io/ent/dialect"
	entsql "entgo.io/ent/dialect/sql"
	"entgo.io/ent/dialect/sql/schema"

	"github.com/leasehold/leasehold/core"
	entstore "github.com/leasehold/leasehold/drivers/ent"
)

// The store on the driver the application's ent client is built from
// (ent.NewClient(ent.Driver(drv))), here PostgreSQL through pgx's
// database/sql driver, wrapped by dialect.Debug, which then logs
// leasehold's statements too. Migrate creates the schema; or add it to
// ent's migration (see NewSchema).
func ExampleNew() {
	db, err := sql.Open("pgx", "postgres://app@127.0.0.1:5432/app?sslmode=disable")
	if err != nil {
		log.Fatal(err)
	}
	drv := dialect.Debug(entsql.OpenDB(dialect.Postgres, db))
	store, err := entstore.New(drv)
	if err != nil {
		log.Fatal(err)
	}
	if err := store.Migrate(context.Background()); err != nil {
		log.Fatal(err)
	}
	locks, err := core.New(store)
	if err != nil {
		log.Fatal(err)
	}
	defer locks.Close(context.Background())
}

// leasehold's tables in the application's automatic migration, which
// with a generated client is client.Schema.Create(ctx, locks.MigrateOption()).
// Here MySQL, through go-sql-driver/mysql.
func ExampleNewSchema() {
	drv, err := entsql.Open(dialect.MySQL, "app:secret@tcp(127.0.0.1:3306)/app?parseTime=true")
	if err != nil {
		log.Fatal(err)
	}
	locks, err := entstore.NewSchema(drv.Dialect(), "")
	if err != nil {
		log.Fatal(err)
	}
	m, err := schema.NewMigrate(drv, locks.MigrateOption())
	if err != nil {
		log.Fatal(err)
	}
	var appTables []*schema.Table // the generated migrate.Tables
	if err := m.Create(context.Background(), appTables...); err != nil {
		log.Fatal(err)
	}
}
