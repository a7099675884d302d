package integration_test

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	sqlstore "github.com/leasehold/leasehold/drivers/sql"
	"github.com/leasehold/leasehold/internal/testserver"
)

// call is one statement an executor was given, with its arguments.
type call struct {
	sql   string
	args  []any
	query bool
}

// benchExecutor is the engine's executor for the benchmarks: a dbExecutor
// (the same calls as sqlstore.New's) that counts statements, BEGIN and
// COMMIT included, and can capture the calls of one operation so that the
// raw baseline replays exactly those statements.
type benchExecutor struct {
	dbExecutor
	n       *atomic.Int64
	capture *[]call // nil when not capturing
}

func (e benchExecutor) Exec(ctx context.Context, q string, args []any) (sql.Result, error) {
	e.n.Add(1)
	if e.capture != nil {
		*e.capture = append(*e.capture, call{q, args, false})
	}
	return e.dbExecutor.Exec(ctx, q, args)
}

func (e benchExecutor) Query(ctx context.Context, q string, args []any, scan func(sqlstore.Row) error) error {
	e.n.Add(1)
	if e.capture != nil {
		*e.capture = append(*e.capture, call{q, args, true})
	}
	return e.dbExecutor.Query(ctx, q, args, scan)
}

func (e benchExecutor) InTx(ctx context.Context, fn func(tx sqlstore.Executor) error) error {
	e.n.Add(2) // BEGIN, and COMMIT or ROLLBACK
	return e.dbExecutor.InTx(ctx, func(tx sqlstore.Executor) error {
		inner := e
		inner.dbExecutor = tx.(dbExecutor)
		return fn(inner)
	})
}

// replay runs captured calls by hand, in a transaction when inTx: the
// baseline of an application that wrote the statements itself.
func replay(ctx context.Context, db *sql.DB, calls []call, inTx bool) error {
	var q interface {
		ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
		QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	} = db
	var tx *sql.Tx
	if inTx {
		var err error
		if tx, err = db.BeginTx(ctx, nil); err != nil {
			return err
		}
		q = tx
	}
	for _, c := range calls {
		if c.query {
			rows, err := q.QueryContext(ctx, c.sql, c.args...)
			if err != nil {
				return err
			}
			for rows.Next() {
			}
			if err := errors.Join(rows.Err(), rows.Close()); err != nil {
				return err
			}
			continue
		}
		if _, err := q.ExecContext(ctx, c.sql, c.args...); err != nil {
			return err
		}
	}
	if tx != nil {
		return tx.Commit()
	}
	return nil
}

var errNotDone = errors.New("not acquired, renewed or released")

// BenchmarkStore measures, per dialect, acquire+release and renew through
// the Store ("store") next to the same statements issued raw through the
// same *sql.DB ("raw"), so the Store's overhead reads as a ratio. One
// goroutine, one key: the figures are round-trip latency, not throughput.
//
// Commits do not wait for the disk where a session can say so (PostgreSQL
// synchronous_commit=off, SQLite synchronous=OFF): an fsync costs
// milliseconds with a wide spread, and would drown the store's overhead.
// MariaDB's flush is a server-wide setting, left alone.
func BenchmarkStore(b *testing.B) {
	for _, be := range backends {
		b.Run(be.name, func(b *testing.B) {
			db := benchOpen(b, be)
			n := new(atomic.Int64)
			exec := benchExecutor{dbExecutor: dbExecutor{q: db, db: db}, n: n}
			s, err := sqlstore.NewWithExecutor(exec, be.dialect)
			if err != nil {
				b.Fatal(err)
			}
			const ttl = time.Minute
			ctx := context.Background()
			if err := s.Migrate(ctx); err != nil {
				b.Fatal(err)
			}
			// Capture the statements of one acquire, release and renew,
			// for the raw baseline to replay.
			var acquireCalls, releaseCalls, renewCalls []call
			capturing, _ := sqlstore.NewWithExecutor(benchExecutor{exec.dbExecutor, new(atomic.Int64), &acquireCalls}, be.dialect)
			if _, ok, err := capturing.Acquire(ctx, "bench-ar", "o", ttl); err != nil || !ok {
				b.Fatal(ok, err)
			}
			capturing, _ = sqlstore.NewWithExecutor(benchExecutor{exec.dbExecutor, new(atomic.Int64), &releaseCalls}, be.dialect)
			if ok, err := capturing.Release(ctx, "bench-ar", "o"); err != nil || !ok {
				b.Fatal(ok, err)
			}
			if _, ok, err := s.Acquire(ctx, "bench-renew", "o", ttl); err != nil || !ok {
				b.Fatal(ok, err)
			}
			capturing, _ = sqlstore.NewWithExecutor(benchExecutor{exec.dbExecutor, new(atomic.Int64), &renewCalls}, be.dialect)
			if ok, err := capturing.Renew(ctx, "bench-renew", "o", ttl); err != nil || !ok {
				b.Fatal(ok, err)
			}
			mysqlTx := be.dialect.String() == sqlstore.MySQL.String()
			for _, op := range []struct {
				name       string
				store, raw func() error
			}{{
				"acquire-release",
				func() error {
					if _, ok, err := s.Acquire(ctx, "bench-ar", "o", ttl); err != nil || !ok {
						return errors.Join(err, errNotDone)
					}
					if ok, err := s.Release(ctx, "bench-ar", "o"); err != nil || !ok {
						return errors.Join(err, errNotDone)
					}
					return nil
				},
				func() error {
					if err := replay(ctx, db, acquireCalls, mysqlTx); err != nil {
						return err
					}
					return replay(ctx, db, releaseCalls, false)
				},
			}, {
				"renew",
				func() error {
					if ok, err := s.Renew(ctx, "bench-renew", "o", ttl); err != nil || !ok {
						return errors.Join(err, errNotDone)
					}
					return nil
				},
				func() error { return replay(ctx, db, renewCalls, false) },
			}} {
				b.Run(op.name, func(b *testing.B) { testserver.Paired(b, op.store, op.raw, n, "stmts/op") })
			}
		})
	}
}

func benchOpen(b *testing.B, be backend) *sql.DB {
	switch be.dialect.String() {
	case sqlstore.Postgres.String():
		cfg, err := pgx.ParseConfig(testserver.Postgres(b))
		if err != nil {
			b.Fatal(err)
		}
		cfg.RuntimeParams["synchronous_commit"] = "off"
		db := stdlib.OpenDB(*cfg)
		b.Cleanup(func() { db.Close() })
		return db
	case sqlstore.SQLite.String():
		return openDB(b, "sqlite", sqliteDSN(filepath.Join(b.TempDir(), "bench.db"))+"&_pragma=synchronous(OFF)", 16)
	}
	return be.open(b)
}
