package integration

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold/conformance/lateness"
	"github.com/leasehold/leasehold/core"
	"github.com/leasehold/leasehold/core/coretest"
	rueidisstore "github.com/leasehold/leasehold/drivers/rueidis"
	"github.com/leasehold/leasehold/internal/testserver"
)

// notifyServers are the servers the notification tests run on.
var notifyServers = []struct {
	name   string
	server func(testing.TB) (string, string)
}{
	{"standalone", testserver.Redis},
	{"cluster", testserver.RedisCluster},
}

// quiet returns a Locks on store that logs nothing, on the system clock or
// on clock.
func quiet(t *testing.T, store core.LockStore, opts ...core.Option) *core.Locks {
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

// TestReleaseWakesOtherProcess: a release by another client reaches a
// waiter through the release channel, well before its backoff floor
// (2.5s), each time (the later waits reuse the lingering subscription).
func TestReleaseWakesOtherProcess(t *testing.T) {
	for _, srv := range notifyServers {
		t.Run(srv.name, func(t *testing.T) {
			url, prefix := srv.server(t)
			holder := quiet(t, newStore(t, url, prefix))
			waiter := quiet(t, newStore(t, url, prefix))
			key := "notify-" + t.Name()
			for i := range 3 {
				// A release, a message and the waiter's acquire and
				// release: four round trips, each as late as the process,
				// within the second they are allowed.
				lateness.Check(t, time.Second/4, func() string {
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
						t.Fatalf("round %d: waiter: %v", i, err)
					}
					if took := time.Since(released); took > time.Second {
						return fmt.Sprintf("round %d: the waiter took the key %v after the release; want it woken, well under the 2.5s backoff floor", i, took)
					}
					return ""
				})
			}
		})
	}
}

// TestWaiterFollowsExpiry: a holder that stops renewing (a paused
// process) is followed when its lease ends on the server, as the acquire
// script reported it, not at a backoff step.
func TestWaiterFollowsExpiry(t *testing.T) {
	for _, srv := range notifyServers {
		t.Run(srv.name, func(t *testing.T) {
			url, prefix := srv.server(t)
			paused := quiet(t, newStore(t, url, prefix), core.WithClock(core.NewManualClock(time.Now())))
			waiter := quiet(t, newStore(t, url, prefix))
			const ttl = 400 * time.Millisecond
			attempt := 0
			// Too early is proof whatever the load; too late is not, if
			// the process ran late: the waiter's timer, then its acquire,
			// the 300ms allowed split between them.
			lateness.Check(t, 150*time.Millisecond, func() string {
				attempt++
				key := fmt.Sprintf("expiry-%s-%d", t.Name(), attempt)
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
		})
	}
}

// TestSubscriptionReset: with the waiter's connections reset, rueidis
// reconnects and resubscribes, the store logs the loss and the return, and
// a later release still wakes the waiter at once. (rueidis notices an idle connection's reset at its next write,
// which fails: the waiter's try then fails, as any store call on a broken
// connection does, and the waiter, as a service would, waits again.)
func TestSubscriptionReset(t *testing.T) {
	url, prefix := testserver.Redis(t)
	addr := strings.Split(url, "/")[2]
	attempt := 0
	// A release and the waiter's acquire and release, within the second
	// they are allowed: each round trip as late as the process.
	lateness.Check(t, time.Second/4, func() string {
		attempt++
		proxy := testserver.NewProxy(t, addr)
		proxied := strings.Replace(url, addr, proxy.Addr(), 1)
		holder := quiet(t, newStore(t, url, prefix))
		var logs coretest.LogBuffer
		waiter := quiet(t, newStore(t, proxied, prefix, rueidisstore.WithLogger(logs.Logger())))
		key := fmt.Sprintf("reset-%s-%d", t.Name(), attempt)
		held, err := holder.Acquire(context.Background(), key)
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() {
			for {
				lk, err := waiter.Acquire(context.Background(), key, core.WithWait(time.Minute))
				if err == nil {
					done <- nil
					_ = lk.Release(context.Background())
					return
				}
				if !strings.Contains(err.Error(), "reset by peer") && !strings.Contains(err.Error(), "broken pipe") && !strings.Contains(err.Error(), "EOF") {
					done <- err
					return
				}
			}
		}()
		time.Sleep(100 * time.Millisecond)
		if n := proxy.ResetAll(); n == 0 {
			t.Fatal("no connection to reset")
		}
		time.Sleep(500 * time.Millisecond) // rueidis reconnects and resubscribes
		released := time.Now()
		if err := held.Release(context.Background()); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Fatalf("waiter: %v", err)
		}
		if took := time.Since(released); took > time.Second {
			return fmt.Sprintf("the waiter took the key %v after the release; want it woken through the new subscription", took)
		}
		// The loss is logged once, when the connection went away, and the
		// return once, at the new subscription's confirmation.
		if lost, back := logs.Count("WARN", "lost the subscription"), logs.Count("INFO", "release notifications are back"); lost != 1 || back != 1 {
			t.Fatalf("logged the loss %d times and the return %d times, want once each:\n%s", lost, back, logs.String())
		}
		return ""
	})
}
