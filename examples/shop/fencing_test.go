package shop

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/leasehold/leasehold/core"
)

func TestWriteStockRefusesAnOlderToken(t *testing.T) {
	db := openDB(t)
	ctx := context.Background()
	fresh := []StockCount{{ProductID: "salmon-kibble", InStock: 9}}
	stale := []StockCount{{ProductID: "salmon-kibble", InStock: 12}}

	if written, _, err := WriteStock(ctx, db, fresh, 8); err != nil || written != 1 {
		t.Fatalf("write with token 8: %d written, %v", written, err)
	}
	// The same run writes again: its token is still the highest.
	if written, _, err := WriteStock(ctx, db, fresh, 8); err != nil || written != 1 {
		t.Fatalf("second write with token 8: %d written, %v; want the same run's token accepted", written, err)
	}
	// A run that drew token 5, before the run with token 8, writes late.
	written, refused, err := WriteStock(ctx, db, stale, 5)
	if err != nil || written != 0 || refused != 1 {
		t.Fatalf("write with token 5: %d written, %d refused, %v; want it refused", written, refused, err)
	}
	if got := inStock(t, db, "salmon-kibble"); got != 9 {
		t.Fatalf("salmon-kibble: %d in stock, want 9", got)
	}
}

// pauseOwnerWhileAnotherTakesOver plays the story of the fencing section:
// the owner of the reconciliation reads the count (12 bags of salmon
// kibble) and freezes before writing it; three bags are sold; the owner's
// locks expire in the store; another instance takes the job over and writes
// the fresh count (9). It returns the frozen owner, its run, and the gate
// that holds it.
func pauseOwnerWhileAnotherTakesOver(t *testing.T, c *cluster) (owner *node, run <-chan error, frozen *gate) {
	owner = c.nodes[0]
	frozen = c.warehouse.holdNextCount()
	run = c.startRun(owner, reconcile)
	frozen.waitFor(t, 1) // the owner has read salmon-kibble: 12
	c.pause(owner)       // ...and freezes before writing

	c.warehouse.set("salmon-kibble", 9) // three bags sold
	c.advance(31 * time.Second)         // the store expires the owner's locks
	if ran := c.ran(c.fire(reconcile)); len(ran) != 1 {
		t.Fatalf("the takeover tick ran on %d instances, want 1", len(ran))
	}
	if got := inStock(t, c.db, "salmon-kibble"); got != 9 {
		t.Fatalf("after the takeover salmon-kibble has %d in stock, want 9", got)
	}
	return owner, run, frozen
}

func TestFencingRefusesThePausedOwnersWrite(t *testing.T) {
	c := newCluster(t)
	owner, run, frozen := pauseOwnerWhileAnotherTakesOver(t, c)

	// The owner wakes up before it notices its locks are gone, and writes
	// the count it read before the pause. Its token is older: refused.
	frozen.release()
	err := <-run
	var lost *core.LockLostError
	if !errors.As(err, &lost) {
		t.Fatalf("the paused run returned %v, want a *core.LockLostError", err)
	}
	if got := inStock(t, c.db, "salmon-kibble"); got != 9 {
		t.Fatalf("salmon-kibble: %d in stock, want 9: the stale write went through", got)
	}
	if got := c.logs.Count("level=WARN", "stale stock writes refused", "stale=3"); got != 1 {
		t.Fatalf("%d warnings about refused writes, want 1\n%s", got, c.logs)
	}
	if !slices.Contains(owner.lost(), ReconcileJobKey) {
		t.Fatalf("the owner reported %v lost, want %q among them", owner.lost(), ReconcileJobKey)
	}
}

func TestWithoutFencingThePausedOwnerOverwrites(t *testing.T) {
	c := newBareCluster(t)
	for _, n := range c.nodes {
		job, err := n.locks.Job(n.shop.reconcileStockBefore,
			core.WithJobKey(ReconcileJobKey), core.OnOneInstance(), core.WithoutOverlapping())
		if err != nil {
			t.Fatal(err)
		}
		n.jobs = &Jobs{Reconcile: job}
	}
	_, run, frozen := pauseOwnerWhileAnotherTakesOver(t, c)
	frozen.release()
	<-run
	if got := inStock(t, c.db, "salmon-kibble"); got != 12 {
		t.Fatalf("salmon-kibble: %d in stock; without the fence the stale 12 should have landed", got)
	}
}

func TestRunThatNoticesItsLossStopsBeforeWriting(t *testing.T) {
	c := newCluster(t)
	owner, run, _ := pauseOwnerWhileAnotherTakesOver(t, c)

	// This time the owner's clock moves first: its next renewal is refused,
	// its run's context ends, and the run stops before it writes.
	c.resume(owner)
	err := <-run
	var lost *core.LockLostError
	if !errors.As(err, &lost) {
		t.Fatalf("the run returned %v, want a *core.LockLostError", err)
	}
	if got := inStock(t, c.db, "salmon-kibble"); got != 9 {
		t.Fatalf("salmon-kibble: %d in stock, want 9", got)
	}
	if got := c.logs.Count("level=WARN", "lock lost", "key="+ReconcileJobKey); got == 0 {
		t.Fatalf("no warning about the lost lock\n%s", c.logs)
	}
}
