package integration_test

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/leasehold/leasehold/conformance/lateness"
	"github.com/leasehold/leasehold/core"
	pgxstore "github.com/leasehold/leasehold/drivers/pgx"
	sqlstore "github.com/leasehold/leasehold/drivers/sql"
	"github.com/leasehold/leasehold/internal/testserver"
)

// quietLocks returns a Locks on store that logs nothing.
func quietLocks(t *testing.T, store core.LockStore, opts ...core.Option) *core.Locks {
	t.Helper()
	l, err := core.New(store, append([]core.Option{core.WithLogger(slog.New(slog.DiscardHandler))}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close(context.Background()) })
	return l
}

// waitAcquire starts a waiting Acquire of key and returns its result.
func waitAcquire(l *core.Locks, key string) <-chan error {
	done := make(chan error, 1)
	go func() {
		lk, err := l.Acquire(context.Background(), key, core.WithWait(time.Minute))
		if err == nil {
			err = lk.Release(context.Background())
		}
		done <- err
	}()
	return done
}

// handOver has holder take key, starts waiter on it, releases it, and
// returns how long after the release the waiter took it.
func handOver(t *testing.T, holder, waiter *core.Locks, key string) time.Duration {
	t.Helper()
	held, err := holder.Acquire(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	done := waitAcquire(waiter, key)
	time.Sleep(100 * time.Millisecond) // let the waiter wait on a held key
	released := time.Now()
	if err := held.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("waiter: %v", err)
	}
	return time.Since(released)
}

// TestReleaseNotifies: a release by another store reaches a waiter through
// LISTEN/NOTIFY, well before its backoff floor (2.5s), on pgx's pool and
// on database/sql over pgx's stdlib.
func TestReleaseNotifies(t *testing.T) {
	dsn := testserver.Postgres(t)
	pool := openPool(t, dsn, nil)
	migrated(t, pool)
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	dbStore, err := sqlstore.New(db, sqlstore.Postgres, sqlstore.WithListener(pgxstore.DBListener(db)))
	if err != nil {
		t.Fatal(err)
	}
	holderStore, err := pgxstore.New(pool)
	if err != nil {
		t.Fatal(err)
	}
	poolStore, err := pgxstore.New(pool)
	if err != nil {
		t.Fatal(err)
	}
	holder := quietLocks(t, holderStore)
	for name, waiterStore := range map[string]core.LockStore{"pgxpool": poolStore, "database/sql": dbStore} {
		waiter := quietLocks(t, waiterStore)
		for i := range 3 {
			// The hand-over is a release, a notification and the waiter's
			// acquire and release: four round trips, each as late as the
			// process, within the second it is allowed.
			lateness.Check(t, time.Second/4, func() string {
				if took := handOver(t, holder, waiter, "notify-"+name); took > time.Second {
					return fmt.Sprintf("%s, round %d: the waiter took the key %v after the release; want it notified, well under the 2.5s backoff floor", name, i, took)
				}
				return ""
			})
		}
	}
}

// TestWithoutNotificationsFollowsExpiry: a store without notifications
// still follows a holder that stopped renewing at its lease's end, as the
// acquire statement reported it.
func TestWithoutNotificationsFollowsExpiry(t *testing.T) {
	pool := openPool(t, testserver.Postgres(t), nil)
	migrated(t, pool)
	plain, err := pgxstore.New(pool, sqlstore.WithoutNotifications())
	if err != nil {
		t.Fatal(err)
	}
	paused := quietLocks(t, plain, core.WithClock(core.NewManualClock(time.Now())))
	waiter := quietLocks(t, plain)
	const ttl = 400 * time.Millisecond
	attempt := 0
	// Too early is proof whatever the load; too late is not, if the
	// process ran late: the waiter's timer, then its acquire, the 300ms
	// allowed split between them.
	lateness.Check(t, 150*time.Millisecond, func() string {
		attempt++
		key := fmt.Sprintf("expiry-%d", attempt)
		start := time.Now()
		if _, err := paused.Acquire(context.Background(), key, core.WithTTL(ttl)); err != nil {
			t.Fatal(err)
		}
		if err := <-waitAcquire(waiter, key); err != nil {
			t.Fatal(err)
		}
		took := time.Since(start)
		if took < ttl {
			t.Fatalf("waiter took the key %v after a %v lease began: before its end", took, ttl)
		}
		if took > ttl+300*time.Millisecond {
			return fmt.Sprintf("waiter took the key %v after a %v lease began; want just after its end", took, ttl)
		}
		return ""
	})
}
