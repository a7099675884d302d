package shop

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"testing"
)

// reconcileStockBefore is the reconciliation as it was before leasehold: no
// lock, no token, a plain write.
func (s *Shop) reconcileStockBefore(ctx context.Context) error {
	counts, err := s.Warehouse.StockCounts(ctx)
	if err != nil {
		return fmt.Errorf("count stock: %w", err)
	}
	for _, c := range counts {
		if _, err := s.DB.ExecContext(ctx,
			`UPDATE stock SET in_stock = $1 WHERE product_id = $2`, c.InStock, c.ProductID); err != nil {
			return fmt.Errorf("write stock of %s: %w", c.ProductID, err)
		}
	}
	s.Log.Info("stock reconciled", "products", len(counts))
	return nil
}

// onEveryInstance calls fn on each shop at once, as the schedulers of three
// instances do when the same minute comes.
func onEveryInstance(t *testing.T, shops []*Shop, fn func(s *Shop) error) {
	var wg sync.WaitGroup
	for _, s := range shops {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := fn(s); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
}

func TestWithoutLocksEveryInstanceRunsEveryJob(t *testing.T) {
	shops, accounting, warehouse, _ := newShops(t, 3)
	ctx := context.Background()

	// Uploads wait until all three are in flight: each instance has read
	// the pending orders before any of them marks them.
	uploads := accounting.hold()
	go func() {
		uploads.waitFor(t, 3)
		uploads.release()
	}()
	onEveryInstance(t, shops, func(s *Shop) error {
		_, err := s.ExportInvoices(ctx)
		return err
	})
	orders := []string{"ord-1001", "ord-1002", "ord-1003"}
	if got, want := accounting.booked(), [][]string{orders, orders, orders}; !reflect.DeepEqual(got, want) {
		t.Fatalf("booked %v, want %v", got, want)
	}

	onEveryInstance(t, shops, func(s *Shop) error { return s.reconcileStockBefore(ctx) })
	if got := warehouse.fullCounts(); got != 3 {
		t.Fatalf("%d full counts for one tick, want 3", got)
	}
}
