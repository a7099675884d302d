package sqlstore

import (
	"context"
	"database/sql"
)

// Querier runs statements. It is all a [Store] needs from a database handle
// on PostgreSQL and SQLite, where every operation is one statement. *sql.DB,
// *sql.Conn and *sql.Tx implement it, and so do the handles of most ORMs
// (GORM's ConnPool, bun's IDB, sqlx's DB).
type Querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// Tx is a transaction begun by a [Beginner]. *sql.Tx implements it.
type Tx interface {
	Querier
	Commit() error
	Rollback() error
}

// Beginner is a [Querier] that can begin transactions. The MySQL dialect
// needs one: its acquire is a short transaction whose statements must run on
// one connection, holding a row lock between them. [Store.Migrate] uses one on
// PostgreSQL to serialise concurrent migrations. [FromSQL] turns a
// database/sql handle into a Beginner.
type Beginner interface {
	Querier
	BeginTx(ctx context.Context, opts *sql.TxOptions) (Tx, error)
}

// SQLBeginner is a database/sql handle that begins *sql.Tx transactions:
// *sql.DB, *sql.Conn, and the connection pools of most ORMs.
type SQLBeginner interface {
	Querier
	BeginTx(ctx context.Context, opts *sql.TxOptions) (*sql.Tx, error)
}

// FromSQL adapts a database/sql handle to a [Beginner]. (Go has no covariant
// results, so a method returning *sql.Tx does not satisfy one returning Tx.)
func FromSQL(h SQLBeginner) Beginner { return sqlBeginner{h} }

type sqlBeginner struct{ SQLBeginner }

func (b sqlBeginner) BeginTx(ctx context.Context, opts *sql.TxOptions) (Tx, error) {
	tx, err := b.SQLBeginner.BeginTx(ctx, opts)
	if err != nil {
		return nil, err // not a typed nil in an interface
	}
	return tx, nil
}
