// Package pgxstore keeps leasehold's locks in PostgreSQL through pgx's
// native interface (a *pgxpool.Pool or a *pgx.Conn), with the statements of
// the SQL engine in github.com/leasehold/leasehold/drivers/sql: one
// statement per operation, on the database's clock.
//
// Import it as
//
//	import pgxstore "github.com/leasehold/leasehold/drivers/pgx"
//
// The package is named pgxstore, not pgx, so that it never clashes with
// pgx itself, which the same file usually imports.
//
// Use it when the application talks to PostgreSQL through pgx's pool
// rather than database/sql: the store then shares the application's pool,
// its tracer (pgx's QueryTracer sees every lock statement) and its
// settings. pgx's native pool sends each statement in one round trip;
// pgx's database/sql adapter pings a connection that has been idle for
// more than a second before using it, which doubles the round trips of
// renewals (see docs/pgx.md).
package pgxstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/leasehold/leasehold/core"
	sqlstore "github.com/leasehold/leasehold/drivers/sql"
)

// DB is what a Store needs from pgx: *pgxpool.Pool and *pgx.Conn implement
// it. A pgx.Tx implements it too, and is refused (see [New]).
type DB interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	Begin(ctx context.Context) (pgx.Tx, error)
}

// Store is a [core.LockStore] and [core.Lister] in a PostgreSQL table, on
// pgx. It is the SQL engine's [sqlstore.Store], so it has every method of
// that type: Migrate, Schema, ResetTokens, List.
type Store struct {
	*sqlstore.Store
}

var (
	_ core.LockStore = Store{}
	_ core.Lister    = Store{}
)

// driver is how the engine knows this package: pgx takes $n.
var driver = sqlstore.Driver{Name: "pgxstore", Placeholder: sqlstore.Dollar}

// New returns a Store over db, a *pgxpool.Pool (or a *pgx.Conn, which one
// goroutine at a time may use: give a Store a pool). It does not touch the
// database: call Migrate at start-up, or run the statements of
// sqlstore.SchemaSQL(sqlstore.Postgres, table) in your migrations. Options
// are the engine's, such as [sqlstore.WithTable].
//
// On a *pgxpool.Pool, waiters of this process are woken when a release by
// any process commits: the release statement notifies, and the store
// listens on one connection of the pool while it has waiters (see
// [PoolListener]; [sqlstore.WithoutNotifications] behind a pooler in
// transaction mode). A *pgx.Conn cannot spare a connection: its waiters
// try at the holder's lease end and at their backoff steps.
//
// A pgx.Tx is refused with an error matching [sqlstore.ErrTransaction]: a
// lock taken in an uncommitted transaction is invisible to other instances
// and vanishes at rollback.
func New(db DB, opts ...sqlstore.Option) (Store, error) {
	if err := core.ValidateHandle("DB", db); err != nil {
		return Store{}, fmt.Errorf("pgxstore: %w", err)
	}
	switch db.(type) {
	case pgx.Tx:
		return Store{}, fmt.Errorf("pgxstore: %T: %w", db, sqlstore.ErrTransaction)
	}
	if pool, ok := db.(*pgxpool.Pool); ok && pool != nil {
		// First, so that the caller's WithListener or
		// WithoutNotifications wins.
		opts = append([]sqlstore.Option{sqlstore.WithListener(PoolListener(pool))}, opts...)
	}
	s, err := driver.New(executor{db}, sqlstore.Postgres, opts...)
	if err != nil {
		return Store{}, err
	}
	return Store{s}, nil
}

// executor runs the engine's statements on pgx.
type executor struct{ db DB }

func (e executor) Exec(ctx context.Context, query string, args []any) (sql.Result, error) {
	tag, err := e.db.Exec(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return result(tag.RowsAffected()), nil
}

func (e executor) Query(ctx context.Context, query string, args []any, scan func(sqlstore.Row) error) error {
	rows, err := e.db.Query(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := scan(rows); err != nil {
			return err
		}
	}
	// Err reports what arrived after the last row, and the statement's end.
	return rows.Err()
}

func (e executor) InTx(ctx context.Context, fn func(tx sqlstore.Executor) error) error {
	return pgx.BeginFunc(ctx, e.db, func(tx pgx.Tx) error { return fn(executor{tx}) })
}

// result is the sql.Result of a pgx statement: rows affected only, since
// PostgreSQL has no last insert id (the engine never asks for it there).
type result int64

func (r result) RowsAffected() (int64, error) { return int64(r), nil }

func (r result) LastInsertId() (int64, error) {
	return 0, errors.New("pgxstore: PostgreSQL has no last insert id")
}
