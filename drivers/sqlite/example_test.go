package sqlitestore_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	sqlitestore "github.com/leasehold/leasehold/drivers/sqlite"
)

// Every process on the host that opens the same file shares its locks.
func Example() {
	dir, err := os.MkdirTemp("", "leasehold")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	store, err := sqlitestore.Open(filepath.Join(dir, "locks.db"))
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()

	ctx := context.Background()
	token, ok, err := store.Acquire(ctx, "nightly-report", "worker-1", 30*time.Second)
	fmt.Println(token, ok, err)
	_, ok, err = store.Acquire(ctx, "nightly-report", "worker-2", 30*time.Second)
	fmt.Println(ok, err)
	ok, err = store.Release(ctx, "nightly-report", "worker-1")
	fmt.Println(ok, err)
	token, ok, err = store.Acquire(ctx, "nightly-report", "worker-2", 30*time.Second)
	fmt.Println(token, ok, err)
	// Output:
	// 1 true <nil>
	// false <nil>
	// true <nil>
	// 2 true <nil>
}
