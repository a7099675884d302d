package entstore

import (
	"context"
	"database/sql"
	"fmt"

	"entgo.io/ent/dialect"
	entsql "entgo.io/ent/dialect/sql"

	sqlstore "github.com/leasehold/leasehold/drivers/sql"
)

// driverExecutor runs the engine's statements through an ent driver, or a
// transaction it began: ent's Exec fills a *sql.Result, its Query an
// *entsql.Rows.
type driverExecutor struct{ eq dialect.ExecQuerier }

func (e driverExecutor) Exec(ctx context.Context, query string, args []any) (sql.Result, error) {
	var res sql.Result
	if err := e.eq.Exec(ctx, query, args, &res); err != nil {
		return nil, err
	}
	if res == nil {
		return nil, fmt.Errorf("%T.Exec returned no result", e.eq)
	}
	return res, nil
}

func (e driverExecutor) Query(ctx context.Context, query string, args []any, scan func(sqlstore.Row) error) error {
	var rows entsql.Rows
	if err := e.eq.Query(ctx, query, args, &rows); err != nil {
		return err
	}
	if rows.ColumnScanner == nil {
		return fmt.Errorf("%T.Query returned no rows", e.eq)
	}
	return sqlstore.ScanRows(rows, scan)
}

// driverTransactor begins its transactions with the driver's Tx.
type driverTransactor struct {
	driverExecutor
	drv dialect.Driver
}

func (e driverTransactor) InTx(ctx context.Context, fn func(tx sqlstore.Executor) error) error {
	tx, err := e.drv.Tx(ctx)
	return inTx(tx, err, func(tx dialect.Tx) error { return fn(driverExecutor{tx}) })
}

// clientExecutor runs the engine's statements through a generated ent
// client's ExecContext and QueryContext, or those of its transaction.
type clientExecutor struct{ q entsql.ExecQuerier }

func (e clientExecutor) Exec(ctx context.Context, query string, args []any) (sql.Result, error) {
	return e.q.ExecContext(ctx, query, args...)
}

func (e clientExecutor) Query(ctx context.Context, query string, args []any, scan func(sqlstore.Row) error) error {
	rows, err := e.q.QueryContext(ctx, query, args...)
	if err != nil {
		return err
	}
	return sqlstore.ScanRows(rows, scan)
}

// clientTransactor begins its transactions with the client's Tx.
type clientTransactor[T ClientTx] struct {
	clientExecutor
	c Client[T]
}

func (e clientTransactor[T]) InTx(ctx context.Context, fn func(tx sqlstore.Executor) error) error {
	tx, err := e.c.Tx(ctx)
	return inTx(tx, err, func(tx T) error { return fn(clientExecutor{tx}) })
}

// inTx runs fn in tx, the transaction just begun (or err, the failure to
// begin it): it commits if fn returns nil, and rolls back and returns fn's
// error otherwise.
func inTx[T interface {
	Commit() error
	Rollback() error
}](tx T, err error, fn func(T) error) error {
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		tx.Rollback() //nolint:errcheck // fn's error decides what the engine does next
		return err
	}
	return tx.Commit()
}
