package shop

import (
	"context"
	"fmt"
)

// ExportResult reports what one invoice export did.
type ExportResult struct {
	Exported int
	BatchID  string
}

// ExportInvoices sends every order that has no invoice yet to the
// accounting system, as one batch, and marks those orders with the batch's
// id. It takes every pending order rather than "yesterday's", so a night it
// did not run is caught up the next night.
func (s *Shop) ExportInvoices(ctx context.Context) (ExportResult, error) {
	orders, err := s.pendingOrders(ctx)
	if err != nil {
		return ExportResult{}, err
	}
	if len(orders) == 0 {
		return ExportResult{}, nil
	}
	batch, err := s.Accounting.UploadInvoices(ctx, orders)
	if err != nil {
		return ExportResult{}, fmt.Errorf("upload invoices: %w", err)
	}
	// The batch is booked: record it even if ctx ended in the meantime, or
	// the next export would book these orders again.
	if err := s.markInvoiced(context.WithoutCancel(ctx), orders, batch); err != nil {
		return ExportResult{}, err
	}
	s.Log.Info("invoices exported", "orders", len(orders), "batch", batch)
	return ExportResult{Exported: len(orders), BatchID: batch}, nil
}

func (s *Shop) pendingOrders(ctx context.Context) ([]Order, error) {
	rows, err := s.DB.QueryContext(ctx,
		`SELECT id, total_cents FROM orders WHERE invoice_batch IS NULL ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("read pending orders: %w", err)
	}
	defer rows.Close()
	var orders []Order
	for rows.Next() {
		var o Order
		if err := rows.Scan(&o.ID, &o.TotalCents); err != nil {
			return nil, fmt.Errorf("read pending orders: %w", err)
		}
		orders = append(orders, o)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read pending orders: %w", err)
	}
	return orders, nil
}

func (s *Shop) markInvoiced(ctx context.Context, orders []Order, batch string) error {
	tx, err := s.DB.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("mark orders invoiced: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	for _, o := range orders {
		if _, err := tx.ExecContext(ctx,
			`UPDATE orders SET invoice_batch = $1 WHERE id = $2`, batch, o.ID); err != nil {
			return fmt.Errorf("mark order %s invoiced: %w", o.ID, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("mark orders invoiced: %w", err)
	}
	return nil
}
