// Package shop is the example service of leasehold's tutorial
// (docs/tutorial.md): an online shop that runs on three instances and has two
// scheduled jobs. A nightly export sends new invoices to the accounting
// system and must never run twice; a stock reconciliation every five minutes
// asks the warehouse for a full count, must not overlap itself when a count
// runs long, and fences its writes with the run's token.
//
// Every Go code block of the tutorial is taken from this package, and
// doc_test.go checks that they still match, that the tutorial names each
// file before showing its code, and that the package builds from the files
// it names.
package shop

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
)

// Schema holds the statements that create the shop's tables the jobs use.
// They are valid on PostgreSQL and SQLite.
var Schema = []string{
	`CREATE TABLE IF NOT EXISTS orders (
	id            TEXT PRIMARY KEY,
	total_cents   BIGINT NOT NULL,
	invoice_batch TEXT -- NULL until the order is exported
)`,
	`CREATE TABLE IF NOT EXISTS stock (
	product_id    TEXT PRIMARY KEY,
	in_stock      BIGINT NOT NULL,
	fencing_token BIGINT NOT NULL DEFAULT 0 -- the token of the run that wrote in_stock
)`,
}

// Migrate creates the shop's tables if they do not exist yet.
func Migrate(ctx context.Context, db *sql.DB) error {
	for _, stmt := range Schema {
		if _, err := db.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("shop: migrate: %w", err)
		}
	}
	return nil
}

// Order is an order waiting for its invoice.
type Order struct {
	ID         string
	TotalCents int64
}

// Accounting is the accounting system the invoices go to. It books every
// batch it receives: a batch uploaded twice is booked twice.
type Accounting interface {
	// UploadInvoices books one invoice per order, as one batch, and returns
	// the batch's id.
	UploadInvoices(ctx context.Context, orders []Order) (batchID string, err error)
}

// StockCount is the warehouse's count of one product.
type StockCount struct {
	ProductID string
	InStock   int64
}

// Alert is a low-stock alert from the warehouse's feed.
type Alert struct {
	ProductID string
	InStock   int64
}

// Warehouse is the warehouse's system.
type Warehouse interface {
	// StockCounts runs a full count of the catalog. It pages through every
	// product, and at month end it takes longer than five minutes.
	StockCounts(ctx context.Context) ([]StockCount, error)
	// Alerts holds the warehouse's alert feed open, calling fn for each
	// alert, until ctx ends or the connection fails. The warehouse accepts
	// one connection per shop.
	Alerts(ctx context.Context, fn func(Alert)) error
}

// Shop is one instance of the service: the jobs' code, the database they
// write to and the two systems they talk to.
type Shop struct {
	DB         *sql.DB
	Accounting Accounting
	Warehouse  Warehouse
	Log        *slog.Logger
}
