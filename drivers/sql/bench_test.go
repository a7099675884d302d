package sqlstore

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

	"github.com/leasehold/leasehold/internal/testserver"
)

// counting counts the statements (round trips, with the driver's own
// exceptions noted in docs/sql.md) a Store or the raw code sends: every
// Exec, Query, Begin, Commit and Rollback.
type counting struct {
	Beginner
	n *atomic.Int64
}

func (c counting) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	c.n.Add(1)
	return c.Beginner.ExecContext(ctx, q, args...)
}

func (c counting) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	c.n.Add(1)
	return c.Beginner.QueryContext(ctx, q, args...)
}

func (c counting) BeginTx(ctx context.Context, opts *sql.TxOptions) (Tx, error) {
	c.n.Add(1)
	tx, err := c.Beginner.BeginTx(ctx, opts)
	if err != nil {
		return nil, err
	}
	return countingTx{tx, c.n}, nil
}

type countingTx struct {
	Tx
	n *atomic.Int64
}

func (c countingTx) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	c.n.Add(1)
	return c.Tx.ExecContext(ctx, q, args...)
}

func (c countingTx) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	c.n.Add(1)
	return c.Tx.QueryContext(ctx, q, args...)
}

func (c countingTx) Commit() error   { c.n.Add(1); return c.Tx.Commit() }
func (c countingTx) Rollback() error { c.n.Add(1); return c.Tx.Rollback() }

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
			q := counting{FromSQL(db), n}
			s, err := NewFromQuerier(q, be.dialect)
			if err != nil {
				b.Fatal(err)
			}
			if err := s.Migrate(context.Background()); err != nil {
				b.Fatal(err)
			}
			raw := rawOps{q: q, st: s.st, tx: be.dialect.txAcquire}
			const ttl = time.Minute
			ctx := context.Background()
			if _, ok, err := s.Acquire(ctx, "bench-renew", "o", ttl); err != nil || !ok {
				b.Fatal(ok, err)
			}
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
					if err := raw.acquire(ctx, "bench-ar", "o", ttl); err != nil {
						return err
					}
					return raw.exec(ctx, raw.st.release, values{key: "bench-ar", owner: "o"})
				},
			}, {
				"renew",
				func() error {
					if ok, err := s.Renew(ctx, "bench-renew", "o", ttl); err != nil || !ok {
						return errors.Join(err, errNotDone)
					}
					return nil
				},
				func() error {
					return raw.exec(ctx, raw.st.renew, values{key: "bench-renew", owner: "o", ttlMillis: ttl.Milliseconds()})
				},
			}} {
				b.Run(op.name, func(b *testing.B) {
					for _, m := range []struct {
						name string
						f    func() error
					}{{"store", op.store}, {"raw", op.raw}} {
						b.Run(m.name, func(b *testing.B) {
							b.ReportAllocs()
							n.Store(0)
							for b.Loop() {
								if err := m.f(); err != nil {
									b.Fatal(err)
								}
							}
							b.ReportMetric(float64(n.Load())/float64(b.N), "stmts/op")
						})
					}
					// store and raw in turn, each timed: a drift in the
					// server or the disk hits both alike, so the ratio holds
					// where the separate runs above disagree by more.
					b.Run("paired", func(b *testing.B) {
						var ts, tr time.Duration
						timed := func(f func() error, d *time.Duration) {
							t0 := time.Now()
							if err := f(); err != nil {
								b.Fatal(err)
							}
							*d += time.Since(t0)
						}
						for i := 0; b.Loop(); i++ {
							if i%2 == 0 { // each goes first half the time
								timed(op.store, &ts)
								timed(op.raw, &tr)
							} else {
								timed(op.raw, &tr)
								timed(op.store, &ts)
							}
						}
						b.ReportMetric(float64(ts)/float64(b.N), "store-ns/op")
						b.ReportMetric(float64(tr)/float64(b.N), "raw-ns/op")
						b.ReportMetric(float64(ts)/float64(tr), "store/raw")
					})
				})
			}
		})
	}
}

func benchOpen(b *testing.B, be backend) *sql.DB {
	switch be.dialect.name {
	case Postgres.name:
		cfg, err := pgx.ParseConfig(testserver.Postgres(b))
		if err != nil {
			b.Fatal(err)
		}
		cfg.RuntimeParams["synchronous_commit"] = "off"
		db := stdlib.OpenDB(*cfg)
		b.Cleanup(func() { db.Close() })
		return db
	case SQLite.name:
		return openDB(b, "sqlite", sqliteDSN(filepath.Join(b.TempDir(), "bench.db"))+"&_pragma=synchronous(OFF)", 16)
	}
	return be.open(b)
}

// rawOps issues a dialect's statements by hand, as an application that
// wrote them itself would: the baseline of the benchmarks.
type rawOps struct {
	q  Beginner
	st statements
	tx bool
}

var errNotDone = errors.New("raw: not acquired, renewed or released")

func (r rawOps) exec(ctx context.Context, st stmt, v values) error {
	res, err := r.q.ExecContext(ctx, st.sql, st.bind(v)...)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return errors.Join(err, errNotDone)
	}
	return nil
}

func (r rawOps) acquire(ctx context.Context, key, owner string, ttl time.Duration) error {
	ms := ttl.Milliseconds()
	if !r.tx {
		var token int64
		if err := scanOne(r.q.QueryContext(ctx, r.st.acquire.sql, key, owner, ms))(&token); err != nil {
			return err
		}
		return nil
	}
	// MySQL, written out: ensure, lock, draw, take.
	tx, err := r.q.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := rawTx(ctx, tx, r.st, key, owner, ms); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}

func rawTx(ctx context.Context, tx Tx, st statements, key, owner string, ms int64) error {
	if _, err := tx.ExecContext(ctx, st.ensure.sql, key); err != nil {
		return err
	}
	var floor, live int64
	if err := scanOne(tx.QueryContext(ctx, st.lock.sql, key))(&floor, &live); err != nil {
		return err
	}
	if live != 0 {
		return errNotDone
	}
	res, err := tx.ExecContext(ctx, st.draw.sql, floor+1)
	if err != nil {
		return err
	}
	token, err := res.LastInsertId()
	if err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, st.take.sql, owner, token, ms, key)
	return err
}

func scanOne(rows *sql.Rows, err error) func(dest ...any) error {
	return func(dest ...any) error {
		if err != nil {
			return err
		}
		defer rows.Close()
		if !rows.Next() {
			return errors.Join(rows.Err(), errNotDone)
		}
		if err := rows.Scan(dest...); err != nil {
			return err
		}
		return rows.Close()
	}
}
