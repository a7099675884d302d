package shop

import (
	"testing"
	"time"
)

func TestOneInstanceHoldsTheFeed(t *testing.T) {
	c := newBareCluster(t)
	for _, n := range c.nodes {
		feed, err := n.shop.StartFeed(n.locks)
		if err != nil {
			t.Fatal(err)
		}
		n.feed = feed
	}
	eventually(t, "one instance holds the feed", func() bool { return c.warehouse.connections() == 1 })
	leader := c.leader()
	if leader == nil {
		t.Fatal("no leader")
	}

	// The leader freezes. Its lease expires ttl after its last renewal, and
	// a candidate takes the feed at its next campaign (every ttl/3).
	c.pause(leader)
	c.advance(30*time.Second + 10*time.Second)
	next := c.leader()
	if next == nil || next == leader {
		t.Fatal("no other instance took over the feed")
	}
	// Until its clock moves, the frozen leader still believes it leads and
	// keeps its connection: both receive the next alert. Whatever it writes
	// on the feed's behalf must carry its token, which is older.
	eventually(t, "the new leader connects", func() bool { return c.warehouse.connections() == 2 })
	c.warehouse.notify(Alert{ProductID: "litter", InStock: 2})
	if got := c.logs.Count("level=WARN", "low stock", "product=litter"); got != 2 {
		t.Fatalf("%d instances logged the alert, want 2", got)
	}
	// It wakes up: its renewal is refused, it learns it lost the lease, and
	// its connection closes with the leadership's context.
	c.resume(leader)
	eventually(t, "the old leader disconnects", func() bool { return c.warehouse.connections() == 1 })

	// The new leader shuts down cleanly and steps down: another candidate
	// takes over at its next campaign, not a ttl later.
	c.shutdown(next)
	c.pause(next)
	c.advance(10 * time.Second)
	if last := c.leader(); last == nil || last == next {
		t.Fatal("no candidate took over the feed after the leader stepped down")
	}
	eventually(t, "the next leader connects", func() bool { return c.warehouse.connections() == 1 })
}

// leader returns the running instance that leads the feed, or nil.
func (c *cluster) leader() *node {
	for _, n := range c.running() {
		if n.feed != nil && n.feed.Leader() {
			return n
		}
	}
	return nil
}
