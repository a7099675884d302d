package sqlstore

import (
	"context"
	"database/sql"
)

// Executor runs the statements of a [Store] on a database client: the whole
// contract between the SQL engine and a client or ORM. [New] and
// [NewFromQuerier] provide one for database/sql; a driver for another
// client (an ORM, pgx's native pool, sqlx) implements it in a few dozen
// lines and passes it to [NewWithExecutor], with the [Placeholder] style its
// client expects. The engine never builds SQL from user input: keys and
// owners always arrive as args. The rows an Executor passes to scan are
// used only until the call returns.
type Executor interface {
	// Exec runs a statement that returns no rows. The engine reads the
	// result's RowsAffected, and on MySQL its LastInsertId.
	Exec(ctx context.Context, query string, args []any) (sql.Result, error)
	// Query runs a statement and calls scan once for each row it returns,
	// in order. An error from scan stops the rows and is returned. An error
	// that arrives after the last row (the commit of an autocommitted
	// statement, a lost connection) must be returned too.
	Query(ctx context.Context, query string, args []any, scan func(Row) error) error
}

// Row is one row of a query's result. *sql.Rows implements it.
type Row interface {
	Scan(dest ...any) error
}

// Transactor is an [Executor] that can run a function in a transaction. The
// MySQL dialect needs one: its acquire is a short transaction whose
// statements must run on one connection, holding a row lock between them.
// On PostgreSQL, [Store.Migrate] uses one to serialise concurrent
// migrations. A Store is always given one when its handle can begin
// transactions.
type Transactor interface {
	Executor
	// InTx runs fn in a transaction on one connection, with tx running its
	// statements: it commits if fn returns nil, and rolls back and returns
	// fn's error otherwise.
	InTx(ctx context.Context, fn func(tx Executor) error) error
}

// RetryClassifier is implemented by an [Executor] that can tell, from its
// client's error types, that a failed transaction was rolled back whole by
// the server and may be run again (a MySQL deadlock or lock wait timeout).
// An Executor without it is classified by [Retryable].
type RetryClassifier interface {
	Retryable(err error) bool
}
