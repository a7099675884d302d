package integration_test

import (
	"context"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/leasehold/leasehold/core"
	"github.com/leasehold/leasehold/internal/testserver"
)

// counter counts the statements pgx sends, and keeps the last one that
// contains a word, for the raw baseline.
type counter struct {
	n    atomic.Int64
	last map[string]string
}

func (c *counter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	c.n.Add(1)
	for word := range c.last {
		if strings.Contains(data.SQL, word) {
			c.last[word] = data.SQL
		}
	}
	return ctx
}

func (c *counter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// Keys and owners are variables, as in an application: a constant string
// converts to an interface without allocating, a variable does not.
var benchKey, benchRenewKey, benchOwner = "bench-ar", "bench-renew", "o"

// BenchmarkStore measures acquire+release and renew through the store
// ("store") and as the same statements written by hand on the same pool
// ("raw"), and both in turn in one loop ("paired"), which reports their
// ratio. stmts/op counts statements sent (one round trip each on pgx's
// pool, whose statement cache prepares each text once).
func BenchmarkStore(b *testing.B) {
	c := &counter{last: map[string]string{"INSERT INTO": "", "SET owner = NULL": "", "SET expires_at": ""}}
	cfg := testserver.Postgres(b) + "&synchronous_commit=off"
	pool := openPool(b, cfg, c)
	s := migrated(b, pool)
	ctx := context.Background()
	locks, err := core.New(s, core.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { locks.Close(ctx) })
	const ttl = time.Minute
	ms := ttl.Milliseconds()
	// Capture the statements once, for the raw code. The engine numbers
	// parameters in order of first use: acquire binds key, owner, ttl;
	// renew ttl, key, owner; release key, owner.
	if _, ok, err := s.Acquire(ctx, "bench-renew", "o", ttl); err != nil || !ok {
		b.Fatal(ok, err)
	}
	if ok, err := s.Renew(ctx, "bench-renew", "o", ttl); err != nil || !ok {
		b.Fatal(ok, err)
	}
	if _, ok, err := s.Acquire(ctx, "bench-ar", "o", ttl); err != nil || !ok {
		b.Fatal(ok, err)
	}
	if ok, err := s.Release(ctx, "bench-ar", "o"); err != nil || !ok {
		b.Fatal(ok, err)
	}
	acquireSQL, releaseSQL, renewSQL := c.last["INSERT INTO"], c.last["SET owner = NULL"], c.last["SET expires_at"]
	// An acquire and a release through core.Locks: the whole cost of a
	// lock to an application.
	locksCycle := func() error {
		lk, err := locks.Acquire(ctx, benchKey, core.WithTTL(ttl))
		if err != nil {
			return err
		}
		return lk.Release(ctx)
	}
	// The same two statements by hand; bounded, the release has a
	// deadline as core's own has (pgx watches every context that can end).
	rawCycle := func(bounded bool) func() error {
		return func() error {
			var token, left int64
			if err := pool.QueryRow(ctx, acquireSQL, benchKey, benchOwner, ms).Scan(&token, &left); err != nil {
				return err
			}
			rctx := ctx
			if bounded {
				var cancel context.CancelFunc
				rctx, cancel = context.WithTimeout(ctx, 5*time.Second)
				defer cancel()
			}
			_, err := pool.Exec(rctx, releaseSQL, benchKey, benchOwner)
			return err
		}
	}
	for _, op := range []struct {
		name       string
		store, raw func() error
	}{{
		"acquire-release",
		func() error {
			if _, ok, err := s.Acquire(ctx, benchKey, benchOwner, ttl); err != nil || !ok {
				return err
			}
			_, err := s.Release(ctx, benchKey, benchOwner)
			return err
		},
		rawCycle(false),
	}, {
		"renew",
		func() error { _, err := s.Renew(ctx, benchRenewKey, benchOwner, ttl); return err },
		func() error { _, err := pool.Exec(ctx, renewSQL, ms, benchRenewKey, benchOwner); return err },
	},
		{"locks-cycle", locksCycle, rawCycle(false)},
		{"locks-cycle-bounded", locksCycle, rawCycle(true)},
	} {
		b.Run(op.name, func(b *testing.B) { testserver.Paired(b, op.store, op.raw, &c.n, "stmts/op") })
	}
}
