package integration

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/leasehold/leasehold/conformance/lateness"
	"github.com/leasehold/leasehold/core"
	"github.com/leasehold/leasehold/core/coretest"
	rueidisstore "github.com/leasehold/leasehold/drivers/rueidis"
	"github.com/leasehold/leasehold/internal/testserver"
)

// slotlessNode starts a cluster-enabled Redis that serves no slot yet, so
// that every keyed command is refused with CLUSTERDOWN, and returns a
// store and a client that talk to it as one node, and a function that
// gives it every slot.
func slotlessNode(t *testing.T) (*rueidisstore.Store, rueidis.Client, func()) {
	t.Helper()
	srv := testserver.PrivateRedis(t, "--cluster-enabled", "yes", "--cluster-require-full-coverage", "no")
	opt, err := rueidis.ParseURL(srv.DSN)
	if err != nil {
		t.Fatal(err)
	}
	opt.DisableCache, opt.ForceSingleClient = true, true
	c, err := rueidis.NewClient(opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	s, err := rueidisstore.New(c, rueidisstore.WithPrefix(prefix))
	if err != nil {
		t.Fatal(err)
	}
	serve := func() {
		ctx := context.Background()
		if err := c.Do(ctx, c.B().ClusterAddslotsrange().StartSlotEndSlot().StartSlotEndSlot(0, 16383).Build()).Error(); err != nil {
			t.Error(err)
			return
		}
		// The node serves its slots once its cluster state is ok.
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			info, err := c.Do(ctx, c.B().ClusterInfo().Build()).ToString()
			if err == nil && strings.Contains(info, "cluster_state:ok") {
				return
			}
		}
		t.Error("the node's cluster state is not ok 10s after it took every slot")
	}
	return s, c, serve
}

// TestNotRunIsTyped: a script that Redis keeps refusing without running
// it (CLUSTERDOWN here; TRYAGAIN during a slot migration is handled the
// same way) is an error matching ErrNotRun once the call's context ends,
// and nothing was taken.
func TestNotRunIsTyped(t *testing.T) {
	s, _, serve := slotlessNode(t)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, ok, err := s.Acquire(ctx, "k", "a", time.Minute)
	if !errors.Is(err, rueidisstore.ErrNotRun) || ok {
		t.Fatalf("Acquire on a node that serves no slot = %v, %v; want an ErrNotRun error", ok, err)
	}
	ctx, cancel = context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := s.Release(ctx, "k", "a"); !errors.Is(err, rueidisstore.ErrNotRun) {
		t.Fatalf("Release on a node that serves no slot: %v; want ErrNotRun", err)
	}
	serve()
	if _, ok, err := s.Acquire(context.Background(), "k", "b", time.Minute); err != nil || !ok {
		t.Fatalf("Acquire once the slot is served = %v, %v; want the key free (the refused script took nothing)", ok, err)
	}
}

// TestNotRunIsSentAgain: an acquisition refused without running is sent
// again within its context, and succeeds once the slot is served.
func TestNotRunIsSentAgain(t *testing.T) {
	s, _, serve := slotlessNode(t)
	time.AfterFunc(100*time.Millisecond, serve)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if token, ok, err := s.Acquire(ctx, "k", "a", time.Minute); err != nil || !ok || token <= 0 {
		t.Fatalf("Acquire while the slot comes to be served = %d, %v, %v; want taken", token, ok, err)
	}
}

// TestBatchFailsOnlyTheUnservedGroup: a batch whose leases span slots
// that the node serves and slots it stopped serving answers the first
// and fails only the second, with a core.BatchError; core.Locks then
// keeps the locks of the served slots past their ttl and loses only the
// others, each at its own deadline.
func TestBatchFailsOnlyTheUnservedGroup(t *testing.T) {
	// The served locks live on renewals every ttl/3 that must be confirmed
	// within 2/3 ttl - SafetyMargin (417ms): a process late by half of that,
	// twice, is inconclusive, not a driver that loses locks.
	lateness.Check(t, 200*time.Millisecond, func() string { return batchFailsOnlyTheUnservedGroup(t) })
}

// batchFailsOnlyTheUnservedGroup is one run of
// TestBatchFailsOnlyTheUnservedGroup, on a node of its own; it returns what
// failed in time (a served lock lost, a served renewal timed out), and
// fails t for the rest.
func batchFailsOnlyTheUnservedGroup(t *testing.T) string {
	s, c, serve := slotlessNode(t)
	serve()
	ctx := context.Background()
	var served, unserved []string
	for i := 0; len(served) < 10 || len(unserved) < 10; i++ {
		key := fmt.Sprintf("k%d", i)
		slot, err := c.Do(ctx, c.B().ClusterKeyslot().Key(key).Build()).AsInt64()
		if err != nil {
			t.Fatal(err)
		}
		if slot < 8192 {
			served = append(served, key)
		} else {
			unserved = append(unserved, key)
		}
	}
	locks := coretest.NewLocks(t, s, core.WithDefaultTTL(time.Second))
	held := map[string]*core.Lock{}
	for _, key := range append(slices.Clone(served), unserved...) {
		lk, err := locks.Acquire(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		held[key] = lk
	}
	if err := c.Do(ctx, c.B().ClusterDelslotsrange().StartSlotEndSlot().StartSlotEndSlot(8192, 16383).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	leases := []core.Lease{{Key: served[0], Owner: held[served[0]].Owner(), TTL: time.Second}, {Key: unserved[0], Owner: held[unserved[0]].Owner(), TTL: time.Second}}
	bctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	renewed, err := s.RenewBatch(bctx, leases)
	var be *core.BatchError
	if errors.As(err, &be) && len(be.Errs) == 2 && errors.Is(be.Errs[0], context.DeadlineExceeded) {
		return fmt.Sprintf("RenewBatch's served lease timed out after 500ms: %v", be.Errs[0])
	}
	if !errors.As(err, &be) || len(renewed) != 2 || !renewed[0] || be.Errs[0] != nil || !errors.Is(be.Errs[1], rueidisstore.ErrNotRun) {
		t.Fatalf("RenewBatch across a served and an unserved slot = %v, %v; want the first renewed, the second failed with ErrNotRun", renewed, err)
	}
	time.Sleep(3 * time.Second) // three ttls
	var lostServed []string
	for _, key := range served {
		if !held[key].Held() {
			lostServed = append(lostServed, fmt.Sprintf("%s, on a served slot, lost: %v", key, context.Cause(held[key].Context())))
		}
	}
	for _, key := range unserved {
		var lost *core.LockLostError
		if !errors.As(context.Cause(held[key].Context()), &lost) || lost.Reason != core.LostDeadline {
			t.Errorf("%s, on an unserved slot: %v; want lost at its deadline", key, context.Cause(held[key].Context()))
		}
	}
	return strings.Join(lostServed, "\n")
}
