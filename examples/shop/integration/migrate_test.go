package integration

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"sync"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver
	"github.com/leasehold/leasehold/core"
	sqlstore "github.com/leasehold/leasehold/drivers/sql"
	"github.com/leasehold/leasehold/examples/shop"
	"github.com/leasehold/leasehold/internal/testserver"
)

// TestMigrateOneAtATimeOnAFreshPostgres starts the shop's migration on
// three instances at once, each with its own pool, lock store and Locks,
// on a fresh database: all three must succeed. Without the lock, PostgreSQL
// fails most such rounds ("duplicate key value violates unique constraint
// pg_type_typname_nsp_index").
func TestMigrateOneAtATimeOnAFreshPostgres(t *testing.T) {
	for round := range 3 {
		t.Run(fmt.Sprint("round ", round+1), func(t *testing.T) {
			dsn := testserver.Postgres(t)
			errs := make([]error, 3)
			var wg sync.WaitGroup
			for i := range errs {
				wg.Go(func() { errs[i] = migrateAsAnInstance(dsn) })
			}
			wg.Wait()
			for i, err := range errs {
				if err != nil {
					t.Errorf("instance %d: %v", i+1, err)
				}
			}
		})
	}
}

// migrateAsAnInstance does what shopd does at start-up on PostgreSQL, up
// to the shop's migration.
func migrateAsAnInstance(dsn string) error {
	ctx := context.Background()
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	store, err := sqlstore.New(db, sqlstore.Postgres)
	if err != nil {
		return err
	}
	if err := store.Migrate(ctx); err != nil {
		return err
	}
	locks, err := core.New(store, core.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		return err
	}
	defer locks.Close(ctx)
	return shop.MigrateOneAtATime(ctx, db, locks)
}
