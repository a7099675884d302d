package bunstore

import (
	"context"
	"database/sql"
	"errors"

	"github.com/uptrace/bun"

	sqlstore "github.com/leasehold/leasehold/drivers/sql"
)

// executor runs the engine's statements through bun's ExecContext and
// QueryContext, which format the arguments into the SQL text and call the
// handle's query hooks.
type executor struct {
	conn bun.IConn
	// literal turns a string argument into the value bun formats exactly;
	// nil if bun's own string literal is exact.
	literal func(string) any
}

var _ sqlstore.Transactor = transactor{}

// Exec implements [sqlstore.Executor].
func (e executor) Exec(ctx context.Context, query string, args []any) (sql.Result, error) {
	args, err := e.args(args)
	if err != nil {
		return nil, err
	}
	res, err := e.conn.ExecContext(ctx, query, args...)
	return res, withSQLState(err)
}

// Query implements [sqlstore.Executor].
func (e executor) Query(ctx context.Context, query string, args []any, scan func(sqlstore.Row) error) error {
	args, err := e.args(args)
	if err != nil {
		return err
	}
	rows, err := e.conn.QueryContext(ctx, query, args...)
	if err != nil {
		return withSQLState(err)
	}
	return withSQLState(sqlstore.ScanRows(rows, scan))
}

// args returns the engine's arguments as bun should format them, or an
// error if one of them would not survive the formatting. No arguments stay
// nil, so that bun leaves the statement's text alone.
func (e executor) args(in []any) ([]any, error) {
	if len(in) == 0 {
		return nil, nil
	}
	out := make([]any, len(in))
	for i, a := range in {
		out[i] = a
		s, ok := a.(string)
		if !ok {
			continue
		}
		if err := checkExact(s); err != nil {
			return nil, err
		}
		if e.literal != nil {
			out[i] = e.literal(s)
		}
	}
	return out, nil
}

// transactor runs the MySQL acquire, and PostgreSQL's Migrate, in bun's
// RunInTx, so BEGIN, COMMIT and ROLLBACK reach the hooks as well.
type transactor struct {
	executor
	db bun.IDB
}

// InTx implements [sqlstore.Transactor].
func (t transactor) InTx(ctx context.Context, fn func(tx sqlstore.Executor) error) error {
	err := t.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		return fn(executor{conn: tx, literal: t.literal})
	})
	return withSQLState(err)
}

// withSQLState gives err a SQLState method if it has the SQLSTATE only as a
// field, as the errors of bun's pgdriver do (Field('C')): the engine reads
// SQLState to tell a missing table or a serialization failure.
func withSQLState(err error) error {
	if err == nil {
		return nil // before the targets of errors.As, which escape
	}
	var (
		state interface{ SQLState() string }
		field interface{ Field(byte) string }
	)
	if errors.As(err, &state) || !errors.As(err, &field) {
		return err
	}
	return &sqlStateError{err: err, state: field.Field('C')}
}

// sqlStateError is an error with its SQLSTATE.
type sqlStateError struct {
	err   error
	state string
}

// Error returns the driver's message.
func (e *sqlStateError) Error() string { return e.err.Error() }

// Unwrap returns the driver's error.
func (e *sqlStateError) Unwrap() error { return e.err }

// SQLState returns the five-character SQLSTATE code.
func (e *sqlStateError) SQLState() string { return e.state }
