package integration

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"entgo.io/ent/dialect"
	entsql "entgo.io/ent/dialect/sql"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	entstore "github.com/leasehold/leasehold/drivers/ent"
	"github.com/leasehold/leasehold/internal/testserver"
)

// BenchmarkStore measures, per server, acquire+release and renew through
// the store ("store") next to the same statements sent by hand through the
// same ent driver ("raw"), as an application that wrote them itself would
// send them. Both go through a recorder that counts statements (and costs
// both the same allocations). "paired" alternates the two in one loop,
// timing each, so that a drift of the server hits both alike: its
// store/raw is the store's overhead as a ratio. One goroutine, one key:
// the figures are round-trip latency, not throughput.
//
// Commits do not wait for the disk where a session can say so
// (PostgreSQL's synchronous_commit, SQLite's synchronous): an fsync costs
// milliseconds with a wide spread, and would drown the store's overhead.
//
//	go test -run '^$' -bench . -benchmem -count 6 .
func BenchmarkStore(b *testing.B) {
	for _, s := range servers {
		b.Run(s.label, func(b *testing.B) {
			ctx := context.Background()
			rec := &recorder{Driver: benchDriver(b, s)}
			if err := migrate(ctx, rec); err != nil {
				b.Fatal(err)
			}
			store, err := entstore.New(rec)
			if err != nil {
				b.Fatal(err)
			}
			raw := handWritten(b, rec, store)
			const ttl = time.Minute
			if _, ok, err := store.Acquire(ctx, "bench-renew", "o", ttl); err != nil || !ok {
				b.Fatal(ok, err)
			}
			ops := []struct {
				name       string
				store, raw func() error
			}{{
				"acquire-release",
				func() error {
					if _, ok, err := store.Acquire(ctx, "bench-ar", "o", ttl); err != nil || !ok {
						return errors.Join(err, errNotDone)
					}
					return done(store.Release(ctx, "bench-ar", "o"))
				},
				func() error {
					if err := raw.acquire(ctx, "bench-ar", "o", ttl); err != nil {
						return err
					}
					return raw.exec(ctx, raw.release, "bench-ar", "o")
				},
			}, {
				"renew",
				func() error { return done(store.Renew(ctx, "bench-renew", "o", ttl)) },
				func() error { return raw.exec(ctx, raw.renew, ttl.Milliseconds(), "bench-renew", "o") },
			}}
			for _, op := range ops {
				b.Run(op.name, func(b *testing.B) { testserver.Paired(b, op.store, op.raw, &rec.n, "stmts/op") })
			}
		})
	}
}

// benchDriver opens s on a fresh database, with commits that do not wait
// for the disk.
func benchDriver(b *testing.B, s server) *entsql.Driver {
	dsn := s.database(b)
	switch s.dialect {
	case dialect.Postgres:
		cfg, err := pgx.ParseConfig(dsn)
		if err != nil {
			b.Fatal(err)
		}
		cfg.RuntimeParams["synchronous_commit"] = "off"
		db := stdlib.OpenDB(*cfg)
		b.Cleanup(func() { db.Close() })
		return entsql.OpenDB(dialect.Postgres, db)
	case dialect.SQLite:
		dsn += "&_pragma=synchronous(OFF)"
	}
	return s.open(b, dsn)
}

var errNotDone = errors.New("not acquired, renewed or released")

func done(ok bool, err error) error {
	if !ok {
		return errors.Join(err, errNotDone)
	}
	return err
}

// rawOps sends the store's statements by hand: their text, as the store
// sent it once, with the arguments an application would pass.
type rawOps struct {
	drv dialect.Driver
	// acquireSQL is one statement, or MySQL's four in a transaction:
	// ensure, lock, draw, take.
	acquireSQL     []string
	release, renew string
}

// handWritten records the statements store sends for each operation.
func handWritten(b *testing.B, rec *recorder, store *entstore.Store) rawOps {
	ctx := context.Background()
	capture := func(f func() error) []string {
		rec.keep = true
		defer func() { rec.keep = false }()
		if err := f(); err != nil {
			b.Fatal(err)
		}
		var stmts []string
		for _, l := range rec.take() {
			if q, ok := strings.CutPrefix(l, "exec "); ok {
				stmts = append(stmts, q)
			} else if q, ok := strings.CutPrefix(l, "query "); ok {
				stmts = append(stmts, q)
			}
		}
		return stmts
	}
	r := rawOps{drv: rec}
	r.acquireSQL = capture(func() error {
		_, ok, err := store.Acquire(ctx, "bench-capture", "o", time.Minute)
		return done(ok, err)
	})
	renew := capture(func() error { return done(store.Renew(ctx, "bench-capture", "o", time.Minute)) })
	release := capture(func() error { return done(store.Release(ctx, "bench-capture", "o")) })
	if n := len(r.acquireSQL); len(renew) != 1 || len(release) != 1 || n != 1 && n != 4 {
		b.Fatalf("the store sent %d, %d and %d statements to acquire, renew and release; the raw code knows 1 (or 4), 1 and 1", n, len(renew), len(release))
	}
	r.renew, r.release = renew[0], release[0]
	return r
}

func (r rawOps) exec(ctx context.Context, query string, args ...any) error {
	_, err := execOne(ctx, r.drv, query, args...)
	return err
}

// execOne runs query on e and checks that it changed one row.
func execOne(ctx context.Context, e dialect.ExecQuerier, query string, args ...any) (sql.Result, error) {
	var res sql.Result
	if err := e.Exec(ctx, query, args, &res); err != nil {
		return nil, err
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return nil, errors.Join(err, errNotDone)
	}
	return res, nil
}

// scanOne runs query on e and scans its one row into dest.
func scanOne(ctx context.Context, e dialect.ExecQuerier, query string, args []any, dest ...any) error {
	var rows entsql.Rows
	if err := e.Query(ctx, query, args, &rows); err != nil {
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

func (r rawOps) acquire(ctx context.Context, key, owner string, ttl time.Duration) error {
	ms := ttl.Milliseconds()
	var token, left int64
	if len(r.acquireSQL) == 1 {
		return scanOne(ctx, r.drv, r.acquireSQL[0], []any{key, owner, ms}, &token, &left)
	}
	tx, err := r.drv.Tx(ctx)
	if err != nil {
		return err
	}
	if err := r.acquireTx(ctx, tx, key, owner, ms); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}

// acquireTx is MySQL's acquire, by hand: ensure, lock, draw, take.
func (r rawOps) acquireTx(ctx context.Context, tx dialect.Tx, key, owner string, ms int64) error {
	ensure, lock, draw, take := r.acquireSQL[0], r.acquireSQL[1], r.acquireSQL[2], r.acquireSQL[3]
	var res sql.Result
	if err := tx.Exec(ctx, ensure, []any{key}, &res); err != nil {
		return err
	}
	var floor, live, left int64
	if err := scanOne(ctx, tx, lock, []any{key}, &floor, &live, &left); err != nil {
		return err
	}
	if live != 0 {
		return fmt.Errorf("%w: held", errNotDone)
	}
	res, err := execOne(ctx, tx, draw, floor+1)
	if err != nil {
		return err
	}
	token, err := res.LastInsertId()
	if err != nil {
		return err
	}
	_, err = execOne(ctx, tx, take, owner, token, ms, key)
	return err
}
