package gormstore_test

import (
	"context"
	"fmt"
	"log"

	"gorm.io/gorm"

	"github.com/leasehold/leasehold/core"
	gormstore "github.com/leasehold/leasehold/drivers/gorm"
	sqlstore "github.com/leasehold/leasehold/drivers/sql"
)

// A store on the application's *gorm.DB, its schema created at start-up,
// guarding a job. (See the integration module for this example running on
// SQLite.)
func ExampleNew() {
	var db *gorm.DB // the application's: gorm.Open(postgres.Open(dsn), &gorm.Config{})

	store, err := gormstore.New(db)
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	if err := store.Migrate(ctx); err != nil { // CREATE ... IF NOT EXISTS, through GORM
		log.Fatal(err)
	}
	locks, err := core.New(store)
	if err != nil {
		log.Fatal(err)
	}
	defer locks.Close(ctx)

	err = locks.WithLock(ctx, "invoice-export", func(ctx context.Context) error {
		token := core.LockFromContext(ctx).Token()
		fmt.Println("exporting, fencing token", token) // pass it with every write
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
}

// The schema's statements for your own migrations (golang-migrate, goose,
// Atlas, or a gormigrate step that runs each with tx.Exec), instead of
// Migrate at start-up.
func ExampleStore_Schema() {
	var db *gorm.DB // the application's

	store, err := gormstore.New(db, sqlstore.WithTable("job_locks"))
	if err != nil {
		log.Fatal(err)
	}
	for _, stmt := range store.Schema() { // up; sqlstore.DropSQL gives down
		fmt.Println(stmt + ";")
	}
}
