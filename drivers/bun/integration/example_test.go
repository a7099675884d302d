package integration

import (
	"context"
	"database/sql"
	"fmt"
	"log"
	"strings"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/sqlitedialect"
	_ "modernc.org/sqlite"

	bunstore "github.com/leasehold/leasehold/drivers/bun"
)

// verbHook prints the first word of each statement bun runs, as bundebug
// or bunotel would record the statement.
type verbHook struct{}

func (verbHook) BeforeQuery(ctx context.Context, _ *bun.QueryEvent) context.Context { return ctx }

func (verbHook) AfterQuery(_ context.Context, e *bun.QueryEvent) {
	fmt.Println("  bun:", strings.Fields(e.Query)[0])
}

// A bun handle on SQLite in memory; the same code runs on PostgreSQL and
// MySQL with their bun dialects.
func Example() {
	sqldb, err := sql.Open("sqlite", "file::memory:")
	if err != nil {
		log.Fatal(err)
	}
	sqldb.SetMaxOpenConns(1) // one in-memory database
	db := bun.NewDB(sqldb, sqlitedialect.New())
	defer db.Close()

	ctx := context.Background()
	store, err := bunstore.New(db)
	if err != nil {
		log.Fatal(err)
	}
	if err := store.Migrate(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Println(store)

	db.AddQueryHook(verbHook{})
	token, ok, err := store.Acquire(ctx, "nightly-report", "worker-1", 30*time.Second)
	fmt.Println("acquired:", token, ok, err)
	_, ok, err = store.Acquire(ctx, "nightly-report", "worker-2", 30*time.Second)
	fmt.Println("acquired:", ok, err)
	ok, err = store.Release(ctx, "nightly-report", "worker-1")
	fmt.Println("released:", ok, err)
	token, ok, err = store.Acquire(ctx, "nightly-report", "worker-2", 30*time.Second)
	fmt.Println("acquired:", token, ok, err)
	// Output:
	// bunstore (SQLite, table leasehold_locks)
	//   bun: INSERT
	// acquired: 1 true <nil>
	//   bun: INSERT
	// acquired: false <nil>
	//   bun: UPDATE
	// released: true <nil>
	//   bun: INSERT
	// acquired: 2 true <nil>
}
