package shop

import (
	"context"
	"path/filepath"
	"reflect"
	"sync"
	"testing"

	"github.com/leasehold/leasehold/core"
	sqlitestore "github.com/leasehold/leasehold/drivers/sqlite"
)

func TestLocksInASharedSQLiteFile(t *testing.T) {
	shops, accounting, _, _ := newShops(t, 3)
	path := filepath.Join(t.TempDir(), "locks.db")
	var exports []*core.Job
	for _, s := range shops {
		// Each instance opens the file on its own, as three processes would.
		store, err := sqlitestore.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { store.Close() })
		locks, err := core.New(store, core.WithLogger(s.Log))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { locks.Close(context.Background()) })
		jobs, err := s.NewJobs(locks)
		if err != nil {
			t.Fatal(err)
		}
		exports = append(exports, jobs.Export)
	}

	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		runs int
	)
	for _, export := range exports {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := export.Run(context.Background())
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				runs++
			case !isSkipped(err):
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	orders := []string{"ord-1001", "ord-1002", "ord-1003"}
	if got, want := accounting.booked(), [][]string{orders}; runs != 1 || !reflect.DeepEqual(got, want) {
		t.Fatalf("%d runs booked %v, want one run booking %v", runs, got, want)
	}
}
