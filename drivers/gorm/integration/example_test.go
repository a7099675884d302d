package integration_test

import (
	"context"
	"fmt"
	"log"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/glebarez/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/leasehold/leasehold/core"
	gormstore "github.com/leasehold/leasehold/drivers/gorm"
)

// A service's *gorm.DB (here pure-Go SQLite in a file) holds its locks: the
// store is created on it, migrated at start-up, and guards a job twice.
// Each run gets a greater fencing token.
func Example() {
	dir, err := os.MkdirTemp("", "gormstore-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	dsn := "file:" + filepath.Join(dir, "app.db") + "?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)"
	db, err := gorm.Open(sqlite.Open(dsn), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		log.Fatal(err)
	}
	pool, err := db.DB()
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()

	store, err := gormstore.New(db)
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	if err := store.Migrate(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Println(store)

	locks, err := core.New(store, core.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		log.Fatal(err)
	}
	defer locks.Close(ctx)
	for range 2 {
		err := locks.WithLock(ctx, "invoice-export", func(ctx context.Context) error {
			fmt.Println("exporting invoices, fencing token", core.LockFromContext(ctx).Token())
			return nil
		})
		if err != nil {
			log.Fatal(err)
		}
	}
	// Output:
	// gormstore (SQLite, table leasehold_locks)
	// exporting invoices, fencing token 1
	// exporting invoices, fencing token 2
}
