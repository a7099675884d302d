package integration_test

import (
	"context"
	"database/sql"
	"net/url"
	"testing"
	"time"

	"github.com/leasehold/leasehold/core"
	"github.com/leasehold/leasehold/core/coretest"
	pgxstore "github.com/leasehold/leasehold/drivers/pgx"
	sqlstore "github.com/leasehold/leasehold/drivers/sql"
	"github.com/leasehold/leasehold/internal/testserver"
)

// eventuallyWithin polls cond until it holds, failing after d.
func eventuallyWithin(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > d {
			t.Fatalf("%s: not within %v", what, d)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestListenerCut: with the listening connection cut (through the test
// proxy, which then refuses new connections), the store logs the loss,
// a waiter still takes a released key at its backoff step (2.5 to 5s),
// and once connections are allowed again the store listens again, logs
// it, and a release wakes a new waiter well before its backoff floor. The
// store's own statements go direct: only the listener is cut. On pgx's
// pool and on database/sql over pgx's stdlib.
func TestListenerCut(t *testing.T) {
	dsn := testserver.Postgres(t)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	pool := openPool(t, dsn, nil)
	holderStore := migrated(t, pool)
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	for _, kind := range []string{"pgxpool", "database/sql"} {
		t.Run(kind, func(t *testing.T) {
			proxy := testserver.NewProxy(t, u.Host)
			pu := *u
			pu.Host = proxy.Addr()
			var logs coretest.LogBuffer
			var store *sqlstore.Store
			if kind == "pgxpool" {
				s, err := pgxstore.New(pool, sqlstore.WithListener(pgxstore.PoolListener(openPool(t, pu.String(), nil))), sqlstore.WithLogger(logs.Logger()))
				if err != nil {
					t.Fatal(err)
				}
				store = s.Store
			} else {
				pdb, err := sql.Open("pgx", pu.String())
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { pdb.Close() })
				if store, err = sqlstore.New(db, sqlstore.Postgres, sqlstore.WithListener(pgxstore.DBListener(pdb)), sqlstore.WithLogger(logs.Logger())); err != nil {
					t.Fatal(err)
				}
			}
			holder := quietLocks(t, holderStore)
			keeper := &countTries{Store: store} // keeps the listener running throughout
			waiter := &countTries{Store: store}
			keeperLocks, waiterLocks := quietLocks(t, keeper), quietLocks(t, waiter)

			kept, k := "kept-"+kind, "cut-"+kind
			if _, err := holder.Acquire(context.Background(), kept); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			keeping := make(chan error, 1)
			go func() {
				_, err := keeperLocks.Acquire(ctx, kept, core.WithWait(time.Hour))
				keeping <- err
			}()
			t.Cleanup(func() { cancel(); <-keeping })
			// LISTEN in effect wakes the keeper for a second try (so
			// does its backoff, 2.5 to 5s: the handover below checks that
			// notifications pass).
			eventuallyWithin(t, 10*time.Second, "LISTEN in effect", func() bool { return keeper.n.Load() >= 2 })

			// handOver releases k once the waiter has tried once, and
			// returns how long after the release the waiter took it.
			handOver := func() time.Duration {
				t.Helper()
				held, err := holder.Acquire(context.Background(), k)
				if err != nil {
					t.Fatal(err)
				}
				before := waiter.n.Load()
				done := waitAcquire(waiterLocks, k)
				eventuallyWithin(t, 10*time.Second, "the waiter's first try", func() bool { return waiter.n.Load() > before })
				released := time.Now()
				if err := held.Release(context.Background()); err != nil {
					t.Fatal(err)
				}
				if err := <-done; err != nil {
					t.Fatalf("waiter: %v", err)
				}
				return time.Since(released)
			}
			if took := handOver(); took > time.Second {
				t.Fatalf("before the cut: the waiter took the key %v after the release; want it notified through the proxy", took)
			}

			// Cut: the next handover waits for the waiter's backoff.
			held, err := holder.Acquire(context.Background(), k)
			if err != nil {
				t.Fatal(err)
			}
			before := waiter.n.Load()
			done := waitAcquire(waiterLocks, k)
			eventuallyWithin(t, 10*time.Second, "the waiter's first try", func() bool { return waiter.n.Load() > before })
			proxy.Refuse(true)
			if proxy.ResetAll() == 0 {
				t.Fatal("no listening connection through the proxy to cut")
			}
			eventuallyWithin(t, 10*time.Second, "the loss logged", func() bool { return logs.Count("WARN", "cannot LISTEN") == 1 })
			released := time.Now()
			if err := held.Release(context.Background()); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("waiter, listener cut: %v", err)
				}
			case <-time.After(time.Minute):
				t.Fatal("listener cut: the waiter did not take the released key within a minute")
			}
			// Its backoff step comes 2.5 to 5s after its last try, which
			// came before the release.
			if took := time.Since(released); took > 5*time.Second {
				t.Logf("listener cut: the waiter took the key %v after the release, %v after its latest backoff step could end: a late timer", took, took-5*time.Second)
			} else {
				t.Logf("listener cut: the waiter took the key %v after the release, at its backoff step", took)
			}

			// Back: the store listens again (it retries every 5s), logs
			// it, and notifications wake waiters again.
			proxy.Refuse(false)
			eventuallyWithin(t, 15*time.Second, "listening again, logged", func() bool {
				return logs.Count("INFO", "listening for release notifications again") == 1
			})
			if took := handOver(); took > time.Second {
				t.Fatalf("after the listener came back: the waiter took the key %v after the release; want it notified, well under its 2.5s backoff floor", took)
			}
			if n := logs.Count("WARN", "cannot LISTEN"); n != 1 {
				t.Fatalf("the loss logged %d times, want once:\n%s", n, logs.String())
			}
		})
	}
}
