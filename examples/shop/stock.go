package shop

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/leasehold/leasehold/core"
)

// ReconcileStock asks the warehouse for a full count and writes it to the
// stock table. It runs as a job (see [Shop.NewJobs]): its context carries
// the run's lock, whose fencing token guards every write.
func (s *Shop) ReconcileStock(ctx context.Context) error {
	lock := core.LockFromContext(ctx)
	if lock == nil {
		return errors.New("shop: ReconcileStock must run under its job's lock")
	}
	// ctx ends if this run loses its lock: the count stops...
	counts, err := s.Warehouse.StockCounts(ctx)
	if err != nil {
		return fmt.Errorf("count stock: %w", err)
	}
	// ...and the token stops a write that slips through anyway.
	written, stale, err := WriteStock(ctx, s.DB, counts, lock.Token())
	if err != nil {
		return err
	}
	if stale > 0 {
		s.Log.Warn("stale stock writes refused: a newer run wrote those products",
			"stale", stale, "token", lock.Token())
	}
	s.Log.Info("stock reconciled", "products", written, "token", lock.Token())
	return nil
}

// WriteStock writes counts to the stock table, fenced by token: a product
// is written only if no run with a greater token has written it already
// (the same run may write it again), and the row keeps the token it was
// written with. It returns how many products it wrote and how many it
// refused as stale. Every product has a row in the stock table, created
// with the product.
func WriteStock(ctx context.Context, db *sql.DB, counts []StockCount, token int64) (written, stale int, err error) {
	for _, c := range counts {
		res, err := db.ExecContext(ctx, `
UPDATE stock SET in_stock = $1, fencing_token = $2
WHERE product_id = $3 AND fencing_token <= $2`,
			c.InStock, token, c.ProductID)
		if err != nil {
			return written, stale, fmt.Errorf("write stock of %s: %w", c.ProductID, err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return written, stale, fmt.Errorf("write stock of %s: %w", c.ProductID, err)
		}
		if n == 1 {
			written++
		} else {
			stale++ // a run with a greater token wrote it
		}
	}
	return written, stale, nil
}
