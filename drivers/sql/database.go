package sqlstore

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/leasehold/leasehold/core"
)

// Querier is a database/sql-shaped handle: *sql.DB, *sql.Conn, and the
// handles of libraries built on database/sql (sqlx's DB, for example). A
// Querier that can also begin transactions (BeginTx returning *sql.Tx, as
// *sql.DB and *sql.Conn do) is used as one. An ORM that formats arguments
// into the SQL itself (bun) or has its own hooks (GORM, ent) has a driver
// of its own instead: see the drivers directory of the repository.
type Querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// sqlBeginner is a Querier that begins database/sql transactions.
type sqlBeginner interface {
	Querier
	BeginTx(ctx context.Context, opts *sql.TxOptions) (*sql.Tx, error)
}

// New returns a Store over db in dialect d. It does not touch the database:
// call [Store.Migrate] (or run [SchemaSQL] yourself) before the first lock.
func New(db *sql.DB, d Dialect, opts ...Option) (*Store, error) {
	return NewFromQuerier(db, d, opts...)
}

// NewFromQuerier returns a Store that runs its statements through q, for
// database/sql handles that are not a *sql.DB (a *sql.Conn, sqlx's DB). If
// q can begin transactions it is used for them; the MySQL dialect needs
// that, and is refused without it. A *sql.Tx is refused with
// [ErrTransaction]: a lock taken inside an uncommitted transaction excludes
// nobody.
func NewFromQuerier(q Querier, d Dialect, opts ...Option) (*Store, error) {
	o, err := newOptions(d, opts)
	if err != nil {
		return nil, err
	}
	if err := core.ValidateHandle("Querier", q); err != nil {
		return nil, fmt.Errorf("%s: %w", o.name, err)
	}
	switch q := q.(type) {
	case *sql.Tx:
		return nil, fmt.Errorf("%s: %T: %w", o.name, q, ErrTransaction)
	case sqlBeginner:
		return NewWithExecutor(sqlTransactor{sqlExecutor{q}, q}, d, opts...)
	}
	return NewWithExecutor(sqlExecutor{q}, d, opts...)
}

// sqlExecutor is the Executor of a database/sql handle.
type sqlExecutor struct{ q Querier }

func (e sqlExecutor) Exec(ctx context.Context, query string, args []any) (sql.Result, error) {
	return e.q.ExecContext(ctx, query, args...)
}

func (e sqlExecutor) Query(ctx context.Context, query string, args []any, scan func(Row) error) error {
	rows, err := e.q.QueryContext(ctx, query, args...)
	if err != nil {
		return err
	}
	return ScanRows(rows, scan)
}

// Rows is the result of a query as database/sql and most clients return
// it: *sql.Rows implements it, and so do ent's rows.
type Rows interface {
	Row
	Next() bool
	Err() error
	Close() error
}

// ScanRows calls scan for each of rows, then closes them, and returns the
// first error: from scan, from the rows, or from closing them (which
// reports what arrived after the last row). It is the Query of an
// [Executor] over any client whose rows implement [Rows].
func ScanRows(rows Rows, scan func(Row) error) error {
	defer rows.Close()
	for rows.Next() {
		if err := scan(rows); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	return rows.Close()
}

// sqlTransactor is the Transactor of a database/sql handle that begins
// transactions.
type sqlTransactor struct {
	sqlExecutor
	b sqlBeginner
}

func (e sqlTransactor) InTx(ctx context.Context, fn func(tx Executor) error) error {
	tx, err := e.b.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(sqlExecutor{tx}); err != nil {
		tx.Rollback() //nolint:errcheck // fn's error matters more
		return err
	}
	return tx.Commit()
}
