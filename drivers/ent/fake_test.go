package entstore_test

import (
	"context"
	"database/sql"
	"errors"

	"entgo.io/ent/dialect"
	entsql "entgo.io/ent/dialect/sql"
)

// fakeDriver is a dialect.Driver without a database: each Exec and Query
// is recorded and answered by the test's functions.
type fakeDriver struct {
	dialect string
	// exec and query answer; nil leaves v untouched and returns nil.
	exec  func(query string, args []any, res *sql.Result) error
	query func(query string, args []any, rows *entsql.Rows) error
	log   *[]string // "exec <query>", "query <query>", "begin", "commit", "rollback"
}

func (f fakeDriver) record(s string) {
	if f.log != nil {
		*f.log = append(*f.log, s)
	}
}

func (f fakeDriver) Exec(_ context.Context, query string, args, v any) error {
	f.record("exec " + query)
	if f.exec == nil {
		return nil
	}
	return f.exec(query, args.([]any), v.(*sql.Result))
}

func (f fakeDriver) Query(_ context.Context, query string, args, v any) error {
	f.record("query " + query)
	if f.query == nil {
		return nil
	}
	return f.query(query, args.([]any), v.(*entsql.Rows))
}

func (f fakeDriver) Tx(context.Context) (dialect.Tx, error) {
	f.record("begin")
	return fakeTx{f}, nil
}

func (fakeDriver) Close() error      { return nil }
func (f fakeDriver) Dialect() string { return f.dialect }

type fakeTx struct{ fakeDriver }

func (t fakeTx) Commit() error   { t.record("commit"); return nil }
func (t fakeTx) Rollback() error { t.record("rollback"); return nil }

// txDriver is shaped like the driver of a generated ent client's
// transaction: a dialect.Driver whose Tx is itself.
type txDriver struct{ fakeDriver }

func (t txDriver) Tx(context.Context) (dialect.Tx, error) { return t, nil }
func (txDriver) Commit() error                            { return nil }
func (txDriver) Rollback() error                          { return nil }

// fakeRows are the rows of a query: each row's values, then err after the
// last one, then closeErr from Close.
type fakeRows struct {
	rows          [][]any
	err, closeErr error
	next          int
}

func (r *fakeRows) Next() bool {
	r.next++
	return r.next <= len(r.rows)
}

func (r *fakeRows) Scan(dest ...any) error {
	row := r.rows[r.next-1]
	if len(dest) != len(row) {
		return errors.New("fakeRows: wrong number of columns")
	}
	for i, d := range dest {
		switch d := d.(type) {
		case *int64:
			*d = row[i].(int64)
		case *string:
			*d = row[i].(string)
		default:
			return errors.New("fakeRows: unexpected destination")
		}
	}
	return nil
}

func (r *fakeRows) Err() error                              { return r.err }
func (r *fakeRows) Close() error                            { return r.closeErr }
func (r *fakeRows) ColumnTypes() ([]*sql.ColumnType, error) { return nil, nil }
func (r *fakeRows) Columns() ([]string, error)              { return nil, nil }
func (r *fakeRows) NextResultSet() bool                     { return false }

// result is a sql.Result.
type result struct{ affected, lastID int64 }

func (r result) RowsAffected() (int64, error) { return r.affected, nil }
func (r result) LastInsertId() (int64, error) { return r.lastID, nil }
