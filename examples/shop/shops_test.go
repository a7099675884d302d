package shop

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/leasehold/leasehold/core/coretest"
	_ "modernc.org/sqlite" // the "sqlite" database/sql driver
)

// openDB returns the shop's database, a SQLite file with three orders to
// invoice and three products on the shelves.
func openDB(t *testing.T) *sql.DB {
	t.Helper()
	path := filepath.Join(t.TempDir(), "shop.db")
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	ctx := context.Background()
	if err := Migrate(ctx, db); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`INSERT INTO orders (id, total_cents) VALUES ('ord-1001', 2599), ('ord-1002', 1250), ('ord-1003', 4800)`,
		`INSERT INTO stock (product_id, in_stock) VALUES ('salmon-kibble', 0), ('catnip', 0), ('litter', 0)`,
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	return db
}

func addOrder(t *testing.T, db *sql.DB, id string) {
	t.Helper()
	if _, err := db.Exec(`INSERT INTO orders (id, total_cents) VALUES ($1, 1000)`, id); err != nil {
		t.Fatal(err)
	}
}

func inStock(t *testing.T, db *sql.DB, product string) int64 {
	t.Helper()
	var n int64
	if err := db.QueryRow(`SELECT in_stock FROM stock WHERE product_id = $1`, product).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// newShops returns n instances of the shop on one database, as in
// production: each instance its own process, all of them sharing the
// database, the accounting system and the warehouse.
func newShops(t *testing.T, n int) ([]*Shop, *fakeAccounting, *fakeWarehouse, *coretest.LogBuffer) {
	db := openDB(t)
	accounting := &fakeAccounting{}
	warehouse := newFakeWarehouse(map[string]int64{"salmon-kibble": 12, "catnip": 30, "litter": 7})
	logs := &coretest.LogBuffer{}
	var shops []*Shop
	for i := range n {
		shops = append(shops, &Shop{
			DB:         db,
			Accounting: accounting,
			Warehouse:  warehouse,
			Log:        logs.Logger().With("instance", fmt.Sprint("shop-", i+1)),
		})
	}
	return shops, accounting, warehouse, logs
}
