package faults

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/leasehold/leasehold/core"
	"github.com/leasehold/leasehold/internal/testserver"
)

// Stall stalls the network between the holders and the target's server
// (bytes are accepted, none forwarded) while every core of the host is
// busy, in three rounds of twelve locks. Each holder must give its lock
// up, with LostDeadline, while the store still holds it: the safety margin
// must cover timers that fire late under load. The figures are the sample
// count, how late each loss came after the holder's deadline, and how long
// the store still held the lock.
func Stall(t *testing.T, tg Target) {
	const rounds, perRound = 3, 12
	proxy := testserver.NewProxy(t, tg.Server.Addr())
	BurnCPU(t)
	h := NewHolders(t, tg, tg.Open(t, proxy.Addr()), "stalled")
	var losses []Loss
	for round := range rounds {
		ctx := context.Background()
		locks := make([]*core.Lock, perRound)
		for i := range locks {
			// After a round, the client may fail a call on a connection
			// the proxy reset before it dials again.
			lk, _, err := h.acquireRetrying(ctx, fmt.Sprintf("stall:%d:%d", round, i), 10*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			locks[i] = lk
		}
		time.Sleep(TTL / 2) // a renewal or two go through
		proxy.Stall()
		for _, lk := range locks {
			select {
			case <-lk.Done():
			case <-time.After(2 * TTL):
				t.Fatalf("lock %s still held %v into the stall", lk.Key(), 2*TTL)
			}
		}
		// Their expiries are read before the stalled renewals can move them.
		losses = h.awaitLosses((round+1)*perRound, TTL)
		proxy.Resume()
		proxy.ResetAll() // drop the connections of the stalled calls
	}
	if len(losses) != rounds*perRound {
		t.Fatalf("%d losses, want %d", len(losses), rounds*perRound)
	}
	late, left := CheckLosses(t, losses, core.LostDeadline, false)
	if len(left) != len(losses) {
		t.Errorf("the server said how long it still held %d of %d lost locks; want all", len(left), len(losses))
	}
	lateLo, lateHi := Spread(late)
	leftLo, leftHi := Spread(left)
	Figure(t, "%s stall under CPU load: %d holders (ttl %v, margin %v) gave up %v to %v after their own deadline, %v to %v before the store's expiry",
		tg.Name, len(losses), TTL, core.SafetyMargin(TTL), lateLo, lateHi, leftLo, leftHi)
}
