package shop

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/leasehold/leasehold/core"
)

func TestOnOneInstanceRunsEachTickOnce(t *testing.T) {
	c := newBareCluster(t)
	for _, n := range c.nodes {
		s, locks := n.shop, n.locks
		export, err := locks.Job(s.exportJob, core.WithJobKey(ExportJobKey), core.OnOneInstance())
		if err != nil {
			t.Fatal(err)
		}
		n.jobs = &Jobs{Export: export}
	}

	// 02:00 on all three instances: one takes the job's lease and runs.
	if ran := c.ran(c.fire(export)); len(ran) != 1 {
		t.Fatalf("the export ran on %d instances, want 1", len(ran))
	}
	orders := []string{"ord-1001", "ord-1002", "ord-1003"}
	if got, want := c.accounting.booked(), [][]string{orders}; !reflect.DeepEqual(got, want) {
		t.Fatalf("booked %v, want %v", got, want)
	}
	// The other two skipped the tick, and said why at debug level.
	if got := c.logs.Count("level=DEBUG", "job tick skipped", "it runs on another instance"); got != 2 {
		t.Fatalf("%d skipped ticks logged, want 2\n%s", got, c.logs)
	}
}

func TestOneOwnerRunsEveryTick(t *testing.T) {
	c := newCluster(t)
	var owner *node
	for range 3 {
		ran := c.ran(c.fire(reconcile))
		if len(ran) != 1 {
			t.Fatalf("the reconciliation ran on %d instances, want 1", len(ran))
		}
		if owner != nil && ran[0] != owner {
			t.Fatal("the reconciliation moved to another instance while its owner was up")
		}
		owner = ran[0]
		c.advance(5 * time.Minute)
	}
	if got := c.warehouse.fullCounts(); got != 3 {
		t.Fatalf("%d full counts in three ticks, want 3", got)
	}
}

func TestJobMovesWhenItsOwnerDies(t *testing.T) {
	c := newCluster(t)
	ran := c.ran(c.fire(export))
	if len(ran) != 1 {
		t.Fatalf("the export ran on %d instances, want 1", len(ran))
	}
	owner := ran[0]
	c.advance(time.Minute)

	// The owner dies: it stops renewing its lease. Until the lease expires,
	// the others still skip.
	c.pause(owner)
	addOrder(t, c.db, "ord-1004")
	if ran := c.ran(c.fire(export)); len(ran) != 0 {
		t.Fatal("an instance ran the export while the dead owner's lease was live")
	}
	// ttl (30s) after the owner's last renewal, the store lets the lease go,
	// and the next tick anywhere takes the job.
	c.advance(30 * time.Second)
	ran = c.ran(c.fire(export))
	if len(ran) != 1 || ran[0] == owner {
		t.Fatalf("after the owner died, the export ran on %d instances, want one survivor", len(ran))
	}
	if got := c.accounting.booked(); len(got) != 2 || !reflect.DeepEqual(got[1], []string{"ord-1004"}) {
		t.Fatalf("booked %v, want the first three orders, then ord-1004", got)
	}
}

func TestJobMovesAtOnceWhenItsOwnerShutsDown(t *testing.T) {
	c := newCluster(t)
	ran := c.ran(c.fire(reconcile))
	if len(ran) != 1 {
		t.Fatalf("the reconciliation ran on %d instances, want 1", len(ran))
	}
	owner := ran[0]
	c.advance(5 * time.Minute)

	// SIGTERM: the owner hands its lease back as it closes...
	c.shutdown(owner)
	c.pause(owner)
	// ...and the very next tick runs on another instance, not a ttl later.
	if ran := c.ran(c.fire(reconcile)); len(ran) != 1 {
		t.Fatalf("the first tick after the owner shut down ran on %d instances, want 1", len(ran))
	}
}

func TestLongCountDoesNotOverlap(t *testing.T) {
	c := newCluster(t)
	owner := c.nodes[0]

	// Month end: the count takes longer than five minutes.
	count := c.warehouse.holdNextCount()
	first := c.startRun(owner, reconcile)
	count.waitFor(t, 1)
	for range 3 {
		c.advance(5 * time.Minute) // the run goes on; its locks are renewed
		for n, err := range c.fire(reconcile) {
			var skipped *core.SkippedError
			if !errors.As(err, &skipped) {
				t.Fatalf("a tick during the long count returned %v, want it skipped", err)
			}
			want := core.SkipOtherInstance
			if n == owner {
				want = core.SkipRunInProgress
			}
			if skipped.Reason != want {
				t.Fatalf("a tick was skipped because %s, want because %s", skipped.Reason, want)
			}
		}
	}
	count.release()
	if err := <-first; err != nil {
		t.Fatalf("the long count: %v", err)
	}
	// The first tick after the count ends runs.
	c.advance(5 * time.Minute)
	if ran := c.ran(c.fire(reconcile)); len(ran) != 1 || ran[0] != owner {
		t.Fatal("the tick after the long count did not run on its owner")
	}
	if got := c.warehouse.fullCounts(); got != 2 {
		t.Fatalf("%d full counts, want 2: the long one and the one after it", got)
	}
}
