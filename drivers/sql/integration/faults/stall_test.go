package faults_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/leasehold/leasehold/core"
	"github.com/leasehold/leasehold/internal/testserver"
)

// TestStall: the network between the holders and the server stalls (bytes
// are accepted, none forwarded) while every core of the host is busy. Each
// holder must give its lock up, with LostDeadline, while the store still
// holds it: the safety margin must cover timers that fire late under load.
// The figures are the sample count, how late each loss came after the
// holder's deadline, and how long the store still held the lock.
func TestStall(t *testing.T) {
	const rounds, perRound = 3, 12
	forEachBackend(t, func(t *testing.T, b backend, srv *testserver.Server) {
		proxy := testserver.NewProxy(t, srv.Addr())
		store, _ := openStore(t, b, b.via(srv.DSN, proxy.Addr()))
		_, direct := openStore(t, b, srv.DSN)
		burnCPU(t)
		h := newHolders(t, b, store, direct, "stalled")
		var losses []loss
		for round := range rounds {
			ctx := context.Background()
			locks := make([]*core.Lock, perRound)
			for i := range locks {
				lk, err := h.acquire(ctx, fmt.Sprintf("stall:%d:%d", round, i))
				if err != nil {
					t.Fatal(err)
				}
				locks[i] = lk
			}
			time.Sleep(ttl / 2) // a renewal or two go through
			proxy.Stall()
			for _, lk := range locks {
				select {
				case <-lk.Done():
				case <-time.After(2 * ttl):
					t.Fatalf("lock %s still held %v into the stall", lk.Key(), 2*ttl)
				}
			}
			losses = h.lossesSoFar() // their expiries read before the stalled renewals can move them
			proxy.Resume()
			proxy.ResetAll() // drop the connections of the stalled calls
		}
		if len(losses) != rounds*perRound {
			t.Fatalf("%d losses, want %d", len(losses), rounds*perRound)
		}
		late, left := h.checkLosses(t, losses, false)
		lateLo, lateHi := spread(late)
		leftLo, leftHi := spread(left)
		figure(t, "%s stall under CPU load: %d holders (ttl %v, margin %v) gave up %v to %v after their own deadline, %v to %v before the store's expiry",
			b.name, len(losses), ttl, core.SafetyMargin(ttl), lateLo, lateHi, leftLo, leftHi)
	})
}
