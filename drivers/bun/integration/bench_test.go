package integration

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/uptrace/bun"

	bunstore "github.com/leasehold/leasehold/drivers/bun"
	"github.com/leasehold/leasehold/internal/testserver"
)

// BenchmarkStore measures, per backend, acquire+release and renew through
// the bun store ("store") next to the very statements it sends, with the
// same arguments, sent by hand through the same *bun.DB ("raw"): the
// driver's and the engine's overhead on top of bun. "paired" runs both in
// one loop and reports their ratio (see testserver.Paired). Statements
// are counted by a bun query hook (stmts/op, with BEGIN and COMMIT); one
// goroutine, one key, so times are latency.
//
// Commits do not wait for the disk where a session can say so (PostgreSQL
// synchronous_commit=off, SQLite synchronous=OFF): an fsync costs
// milliseconds with a wide spread, and would drown the overhead. MariaDB's
// flush is a server-wide setting, left alone.
func BenchmarkStore(b *testing.B) {
	for _, be := range backends {
		b.Run(be.name, func(b *testing.B) {
			db := be.benchOpen(b, be.database(b))
			n := &counter{}
			db.AddQueryHook(n)
			s, err := bunstore.New(db)
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			if err := s.Migrate(ctx); err != nil {
				b.Fatal(err)
			}
			raw := record(b, bun.NewDB(db.DB, db.Dialect()))
			const ttl = time.Minute
			for _, op := range []struct {
				name       string
				store, raw func() error
			}{{
				"acquire-release",
				func() error {
					if _, ok, err := s.Acquire(ctx, "bench-ar", "o", ttl); err != nil || !ok {
						return errors.Join(err, errNotDone)
					}
					return done(s.Release(ctx, "bench-ar", "o"))
				},
				func() error {
					if err := raw.acquire(ctx, db); err != nil {
						return err
					}
					return raw.release.exec(ctx, db)
				},
			}, {
				"renew",
				func() error { return done(s.Renew(ctx, "bench-renew", "o", ttl)) },
				func() error { return raw.renew.exec(ctx, db) },
			}} {
				b.Run(op.name, func(b *testing.B) { testserver.Paired(b, op.store, op.raw, &n.n, "stmts/op") })
			}
		})
	}
}

var errNotDone = errors.New("not acquired, renewed or released")

func done(ok bool, err error) error {
	if err != nil || !ok {
		return errors.Join(err, errNotDone)
	}
	return nil
}

// statement is a query as a bun hook saw it: the SQL with '?' and the
// arguments bun formatted into it.
type statement struct {
	query string
	args  []any
}

func (st statement) exec(ctx context.Context, db bun.IConn) error {
	res, err := db.ExecContext(ctx, st.query, st.args...)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return errors.Join(err, errNotDone)
	}
	return nil
}

// rawOps are the statements of a store's acquire, release and renew, taken
// from a hook, to send by hand.
type rawOps struct {
	// acquire is one statement, or MySQL's four: ensure, lock, draw, take.
	acquireSteps []statement
	// tokenArg is the index of the token among take's arguments.
	tokenArg       int
	release, renew statement
}

// record runs acquire, release and renew through a store on db, which
// shares the benchmark's pool, and keeps the statements its hook saw.
func record(b *testing.B, db *bun.DB) rawOps {
	rec := &recorder{}
	db.AddQueryHook(rec)
	s, err := bunstore.New(db)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	withArgs := func() []statement {
		var out []statement
		for _, e := range rec.take() {
			if len(e.args) > 0 {
				out = append(out, statement{e.template, e.args})
			}
		}
		return out
	}
	var r rawOps
	token, ok, err := s.Acquire(ctx, "bench-ar", "o", time.Minute)
	if err != nil || !ok {
		b.Fatal(ok, err)
	}
	r.acquireSteps = withArgs()
	if len(r.acquireSteps) == 4 {
		take := r.acquireSteps[3].args
		r.tokenArg = slices.Index(take, any(token))
		if r.tokenArg < 0 {
			b.Fatalf("no token %d among take's arguments %v", token, take)
		}
	}
	if err := done(s.Release(ctx, "bench-ar", "o")); err != nil {
		b.Fatal(err)
	}
	release := withArgs()
	// The key the benchmark renews, held by the benchmark's owner.
	if _, ok, err := s.Acquire(ctx, "bench-renew", "o", time.Minute); err != nil || !ok {
		b.Fatal(ok, err)
	}
	rec.take()
	if err := done(s.Renew(ctx, "bench-renew", "o", time.Minute)); err != nil {
		b.Fatal(err)
	}
	renew := withArgs()
	if len(r.acquireSteps) != 1 && len(r.acquireSteps) != 4 || len(release) != 1 || len(renew) != 1 {
		b.Fatalf("recorded %d, %d and %d statements for acquire, release and renew", len(r.acquireSteps), len(release), len(renew))
	}
	r.release, r.renew = release[0], renew[0]
	return r
}

func (r rawOps) acquire(ctx context.Context, db *bun.DB) error {
	if len(r.acquireSteps) == 1 {
		st := r.acquireSteps[0]
		rows, err := db.QueryContext(ctx, st.query, st.args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		var token, left int64
		if !rows.Next() {
			return errors.Join(rows.Err(), errNotDone)
		}
		if err := rows.Scan(&token, &left); err != nil {
			return err
		}
		return rows.Close()
	}
	// MySQL, written out: ensure, lock, draw, take.
	ensure, lock, draw, take := r.acquireSteps[0], r.acquireSteps[1], r.acquireSteps[2], r.acquireSteps[3]
	return db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		if _, err := tx.ExecContext(ctx, ensure.query, ensure.args...); err != nil {
			return err
		}
		var floor, live, left int64
		if err := tx.QueryRowContext(ctx, lock.query, lock.args...).Scan(&floor, &live, &left); err != nil {
			return err
		}
		if live != 0 {
			return errNotDone
		}
		res, err := tx.ExecContext(ctx, draw.query, floor+1)
		if err != nil {
			return err
		}
		token, err := res.LastInsertId()
		if err != nil {
			return err
		}
		args := slices.Clone(take.args)
		args[r.tokenArg] = token
		_, err = tx.ExecContext(ctx, take.query, args...)
		return err
	})
}
