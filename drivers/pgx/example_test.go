package pgxstore_test

import (
	"context"
	"log"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/leasehold/leasehold/core"
	pgxstore "github.com/leasehold/leasehold/drivers/pgx"
)

// Locks on the application's pgx pool: migrate once at start-up, then hand
// the store to core.New.
func Example() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, "postgres://app@127.0.0.1:5432/app?sslmode=disable")
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()

	store, err := pgxstore.New(pool)
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
	defer locks.Close(context.Background())

	err = locks.WithLock(ctx, "nightly-export", func(ctx context.Context) error {
		token := core.LockFromContext(ctx).Token() // pass it with every write
		log.Printf("exporting with fencing token %d", token)
		return nil
	}, core.WithTTL(30*time.Second))
	if err != nil {
		log.Print(err)
	}
}
