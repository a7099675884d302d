package faults_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/leasehold/leasehold/core"
	"github.com/leasehold/leasehold/internal/testserver"
)

// TestRestart: the server restarts under held locks, first quickly, then
// after a crash and an outage longer than the ttl. Each holder either keeps
// its lock (renewals recover) or gives it up with LostDeadline before the
// store's expiry; a second instance that waits for the keys is granted
// none while its holder still believes it holds it; and both instances'
// pools reconnect with no action from the application.
func TestRestart(t *testing.T) {
	const n = 8
	forEachBackend(t, func(t *testing.T, b backend, srv *testserver.Server) {
		store, direct := openStore(t, b, srv.DSN)
		a := newHolders(t, b, store, direct, "a")
		other, _ := openStore(t, b, srv.DSN)
		contender := newHolders(t, b, other, direct, "b")
		ctx := context.Background()

		take := func(phase string) []*core.Lock {
			locks := make([]*core.Lock, n)
			for i := range locks {
				lk, err := a.acquire(ctx, fmt.Sprintf("restart:%s:%d", phase, i))
				if err != nil {
					t.Fatalf("%s: %v", phase, err)
				}
				locks[i] = lk
			}
			return locks
		}

		// A quick restart: renewals fail for a moment, then recover.
		locks := take("quick")
		time.Sleep(ttl / 2)
		start := time.Now()
		srv.Restart()
		down := time.Since(start)
		time.Sleep(ttl)
		kept := 0
		for _, lk := range locks {
			if lk.Held() {
				kept++
			}
		}
		quickLosses := len(a.lossesSoFar())
		if kept+quickLosses != n {
			t.Fatalf("after a quick restart: %d locks held, %d lost, of %d", kept, quickLosses, n)
		}
		for _, lk := range locks {
			_ = lk.Release(ctx)
		}

		// A crash, and the server stays down for longer than the ttl, while
		// the contender waits for the keys.
		locks = take("crash")
		time.Sleep(ttl / 2)
		srv.Kill()
		crashed := time.Now()
		granted := make(chan error, n)
		for _, lk := range locks {
			go func() {
				won, err := waitFor(ctx, contender, lk.Key(), 4*ttl)
				if err != nil {
					granted <- fmt.Errorf("the contender could not take %s: %w", lk.Key(), err)
					return
				}
				// A second holder while the first still believes is a
				// double grant.
				if lk.Held() || lk.Context().Err() == nil {
					granted <- fmt.Errorf("%s was granted to a second instance while its holder still believed it held it", lk.Key())
				} else {
					granted <- nil
				}
				_ = won.Release(ctx)
			}()
		}
		time.Sleep(ttl + ttl/4)
		srv.Start()
		outage := time.Since(crashed)
		for range locks {
			if err := <-granted; err != nil {
				t.Error(err)
			}
		}
		losses := a.lossesSoFar()[quickLosses:]
		for _, l := range losses {
			if l.key == "" {
				t.Fatal("a loss of an unknown lock")
			}
		}
		if len(losses) != n {
			t.Fatalf("%d locks lost across an outage of %v, want all %d", len(losses), outage, n)
		}
		late, _ := a.checkLosses(t, losses, true)

		// The pools reconnected by themselves.
		if lk, err := a.acquire(ctx, "restart:after"); err != nil {
			t.Fatalf("acquire after the restart: %v", err)
		} else {
			_ = lk.Release(ctx)
		}
		lateLo, lateHi := spread(late)
		figure(t, "%s restart (down %v): %d of %d locks kept, %d lost; crash and %v outage: %d of %d lost (LostDeadline), %v to %v after their deadline, none later than ttl after its last confirmed renewal was sent; no key granted twice; pools reconnected",
			b.name, down.Round(time.Millisecond), kept, n, quickLosses, outage.Round(time.Millisecond), len(losses), n, lateLo, lateHi)
	})
}

// waitFor takes key for h, waiting while it is held and retrying while the
// store fails (the server is down), for up to limit.
func waitFor(ctx context.Context, h *holders, key string, limit time.Duration) (*core.Lock, error) {
	end := time.Now().Add(limit)
	for {
		lk, err := h.acquire(ctx, key, core.WithWait(time.Until(end)))
		if err == nil || time.Now().After(end) {
			return lk, err
		}
		time.Sleep(50 * time.Millisecond)
	}
}
