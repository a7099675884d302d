package conformance

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/leasehold/leasehold/core"
)

// electThree makes three instances candidates for a fresh key; i0, which
// campaigns first, must lead at once and alone.
func electThree(t testing.TB, e *env) *cluster {
	t.Helper()
	c := newCluster(t, e, 3)
	c.elect(e.key())
	if l := c.leaders(); len(l) != 1 || l[0] != c.nodes[0] || c.acquisitions() != 1 {
		c.lateLosses(t) // i0's first renewals may not have come back in time
		t.Fatalf("after the first campaigns, leaders: %s (%s); i0, which campaigned first on a free key, must lead alone: the store must give the key to the first Acquire and refuse it to the others", names(l), c.describeElection())
	}
	return c
}

// stillLeads fails the case unless i0, alive since it took the lead at the
// start, still leads alone and has never been told it lost.
func stillLeads(t testing.TB, c *cluster, when string) {
	t.Helper()
	if l := c.leaders(); len(l) != 1 || l[0] != c.nodes[0] || c.acquisitions() != 1 {
		c.lateLosses(t) // the leader's renewals may not have come back in time
		t.Fatalf("%v after the election started, %s, leaders: %s (%s); i0, alive and renewing its lease every ttl/3, must still lead alone, with OnAcquired called once: the store must confirm the renewals of the lease's holder and refuse the lease to the other candidates", c.now(), when, names(l), c.describeElection())
	}
	if _, lost := c.nodes[0].record(); len(lost) != 0 {
		c.lateLosses(t)
		t.Fatalf("%v after the election started, %s, the leader i0 had been told it lost: %v; while it is alive, the store must confirm its renewals", c.now(), when, lost)
	}
}

// electionOneLeader watches three candidates for longer than a ttl: one
// leads throughout, the others campaign every ttl/3 and lose.
func electionOneLeader(t testing.TB, e *env) {
	c := electThree(t, e)
	const checks = 5
	for i := range checks {
		c.elapse(c.ttl / 4)
		stillLeads(t, c, fmt.Sprintf("at check %d of %d", i+1, checks))
	}
}

// electionHandoverOnClose closes the leader: it steps down, and another
// candidate leads at its next campaign.
func electionHandoverOnClose(t testing.TB, e *env) {
	c := electThree(t, e)
	c.elapse(c.ttl / 2)
	leader := c.nodes[0]
	stillLeads(t, c, "before its Close")
	acq, _ := leader.record()
	old := acq[0].lead

	if err := c.closeNode(leader); err != nil {
		t.Fatalf("Close of the leader i0 returned %v; stepping down releases the lease, which must succeed for its live holder", err)
	}
	if _, lost := leader.record(); len(lost) != 1 || lost[0] != nil {
		t.Fatalf("after Close, the leader i0's OnLost calls were %v; Close steps down, so OnLost must be called once, with nil", lost)
	}
	if leader.election.Leader() {
		t.Fatal("after Close, i0's Election.Leader() is still true; a closed instance does not lead")
	}
	// Each candidate's next campaign is due within ttl/3 on its own clock.
	others := c.nodes[1:]
	closedAt := map[*node]time.Time{}
	for _, nd := range others {
		closedAt[nd] = nd.clock.Now()
	}
	start := c.now()
	c.awaitNewLeader(others, start, c.ttl)
	l := c.leaders(others...)
	if len(l) != 1 {
		t.Fatalf("%v after i0 closed, leaders among i1 and i2: %s (%s); exactly one must lead from its next campaign on, within ttl/3", c.now()-start, names(l), c.describeElection())
	}
	next := l[0]
	acq, _ = next.record()
	if len(acq) != 1 {
		t.Fatalf("the new leader %s's OnAcquired was called %d times; once", next.name, len(acq))
	}
	if took := acq[0].at.Sub(closedAt[next]); took > c.ttl/3+c.step {
		t.Fatalf("%s took the leadership %v after i0's Close, on its own clock; it campaigns every ttl/3 (%v), so it must lead from its first campaign after the Close: the store must free the key when the leader releases it, not when the lease would have expired", next.name, took, c.ttl/3)
	}
	if acq[0].lead.Token() <= old.Token() {
		t.Fatalf("the new leader %s holds token %d, not greater than the token %d of the lease i0 released; the store must give every acquisition of a key a greater token, across releases", next.name, acq[0].lead.Token(), old.Token())
	}
	c.elapse(c.ttl / 3)
	if l := c.leaders(others...); len(l) != 1 || l[0] != next || c.acquisitions() != 2 {
		t.Fatalf("ttl/3 after %s took over, leaders among i1 and i2: %s (%s); %s must go on leading alone", next.name, names(l), c.describeElection(), next.name)
	}
}

// electionHandoverAfterPause pauses the leader: its lease expires on the
// store's clock, another candidate leads, and the paused one learns it lost
// when its clock moves again.
func electionHandoverAfterPause(t testing.TB, e *env) {
	c := electThree(t, e)
	c.elapse(c.ttl / 2) // i0 has renewed its lease once
	leader := c.nodes[0]
	acq, _ := leader.record()
	old := acq[0].lead

	leader.pause()
	stillLeads(t, c, "when it paused")
	others := c.nodes[1:]
	start := c.now()
	// i0's lease was last renewed no later than the pause, on the store's
	// clock: a campaign sent ttl after it must win, and a candidate
	// campaigns every ttl/3 of its clock, which never runs ahead of the
	// store's (see clockAt); goneCheck adds the kit's margin past the
	// expiry.
	limit := goneCheck(c.ttl) + c.ttl/3
	c.awaitNewLeader(others, start, 2*c.ttl)
	l := c.leaders(others...)
	if len(l) != 1 {
		t.Fatalf("%v after the leader i0 paused, leaders among i1 and i2: %s (%s); the paused leader's lease must expire on the store's clock ttl after its last renewal, and then exactly one candidate must take it at its next campaign", c.now()-start, names(l), c.describeElection())
	}
	next := l[0]
	acq, _ = next.record()
	if len(acq) != 1 {
		t.Fatalf("the new leader %s's OnAcquired was called %d times; once", next.name, len(acq))
	}
	if took := c.clockAt(acq[0].at) - start; took > limit {
		t.Fatalf("%s took the leadership %v after i0 paused, on its own clock; the paused leader's lease, last renewed before the pause, must expire ttl (%v) after it on the store's clock, and a candidate campaigns every ttl/3, so it must lead within %v", next.name, took, c.ttl, limit)
	}
	if acq[0].lead.Token() <= old.Token() {
		t.Fatalf("the new leader %s holds token %d, not greater than the paused leader's %d; the store must give a takeover a token greater than the expired lock's", next.name, acq[0].lead.Token(), old.Token())
	}
	if _, lost := leader.record(); len(lost) != 0 || old.Context().Err() != nil {
		t.Fatalf("the paused leader i0 was told it lost (OnLost %v) while its clock was stopped; a paused instance, whose clock does not move, cannot notice anything", lost)
	}

	// i0 resumes: its next renewal must be refused.
	leader.resume()
	_, lost := leader.record()
	var ll *core.LockLostError
	if len(lost) != 1 || !errors.As(lost[0], &ll) || ll.Reason != core.LostRefused || ll.Token != old.Token() {
		t.Fatalf("after the paused leader i0 resumed and its clock moved past its next renewal, its OnLost calls were %v; OnLost must be called once with a *core.LockLostError for token %d whose Reason is LostRefused: the store must refuse the renewal of a lease that expired and that %s has taken over since", describeErrs(lost), old.Token(), next.name)
	}
	if leader.election.Leader() {
		t.Fatal("after its refused renewal, i0's Election.Leader() is still true")
	}
	if l := c.leaders(); len(l) != 1 || l[0] != next || c.acquisitions() != 2 {
		t.Fatalf("after i0 resumed, leaders: %s (%s); %s must lead alone", names(l), c.describeElection(), next.name)
	}
}

// awaitNewLeader lets time pass until one of others leads and its
// OnAcquired has been called, or until limit after start. Leader() turns
// true before OnAcquired is called, on the goroutine that campaigned: in
// real time the case must wait for both.
func (c *cluster) awaitNewLeader(others []*node, start, limit time.Duration) {
	for (len(c.leaders(others...)) == 0 || c.acquisitions() < 2) && c.now()-start < limit {
		c.elapse(c.step)
	}
}

func describeErrs(errs []error) string {
	if len(errs) == 0 {
		return "none"
	}
	return fmt.Sprintf("%v", errs)
}
