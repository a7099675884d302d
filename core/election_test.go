package core_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/leasehold/leasehold/core"
	"github.com/leasehold/leasehold/core/coretest"
)

const electionTTL = 9 * time.Second // campaigns and renewals every 3s

// candidate is one instance's side of an election: what its callbacks and
// its event handler saw.
type candidate struct {
	nd *jobNode
	e  *core.Election

	mu       sync.Mutex
	acquired []*core.Lock
	lost     []error
	events   []core.Event
	// onAcquired, if set, is what OnAcquired does after it is recorded.
	onAcquired func(lead *core.Lock) error
}

func (cd *candidate) handle(ev core.Event) {
	cd.mu.Lock()
	defer cd.mu.Unlock()
	cd.events = append(cd.events, ev)
}

func (cd *candidate) snapshot() (acquired []*core.Lock, lost []error, events []core.Event) {
	cd.mu.Lock()
	defer cd.mu.Unlock()
	return append([]*core.Lock(nil), cd.acquired...), append([]error(nil), cd.lost...), append([]core.Event(nil), cd.events...)
}

func (cd *candidate) eventsOf(typ core.EventType) []core.Event {
	_, _, evs := cd.snapshot()
	var out []core.Event
	for _, ev := range evs {
		if ev.Type == typ {
			out = append(out, ev)
		}
	}
	return out
}

// newElectionCluster starts n instances, each with its own event handler,
// without electing yet.
func newElectionCluster(t *testing.T, n int) (*jobCluster, []*candidate) {
	t.Helper()
	c := newJobCluster(t, 0)
	var cands []*candidate
	for i := range n {
		cd := &candidate{}
		cd.nd = c.newNode(fmt.Sprintf("node%d", i), c.store, core.WithEventHandler(cd.handle))
		c.nodes = append(c.nodes, cd.nd)
		cands = append(cands, cd)
	}
	return c, cands
}

// elect makes cd a candidate for key.
func (cd *candidate) elect(t *testing.T, key string) {
	t.Helper()
	e, err := cd.nd.locks.Elect(key, core.Campaign{
		TTL: electionTTL,
		OnAcquired: func(lead *core.Lock) error {
			cd.mu.Lock()
			cd.acquired = append(cd.acquired, lead)
			fn := cd.onAcquired
			cd.mu.Unlock()
			if fn != nil {
				return fn(lead)
			}
			return nil
		},
		OnLost: func(err error) {
			cd.mu.Lock()
			defer cd.mu.Unlock()
			cd.lost = append(cd.lost, err)
		},
	})
	if err != nil {
		t.Fatalf("%s: Elect: %v", cd.nd.name, err)
	}
	cd.e = e
}

// leaders returns the candidates whose Leader() is true.
func leaders(cands []*candidate) []*candidate {
	var out []*candidate
	for _, cd := range cands {
		if cd.e != nil && cd.e.Leader() {
			out = append(out, cd)
		}
	}
	return out
}

func acquisitions(cands []*candidate) int {
	n := 0
	for _, cd := range cands {
		acq, _, _ := cd.snapshot()
		n += len(acq)
	}
	return n
}

// electThree makes three candidates for "leader"; node0 campaigns first and
// leads.
func electThree(t *testing.T) (*jobCluster, []*candidate) {
	t.Helper()
	c, cands := newElectionCluster(t, 3)
	for _, cd := range cands {
		cd.elect(t, "leader")
	}
	if l := leaders(cands); len(l) != 1 || l[0] != cands[0] {
		t.Fatalf("leaders after the first campaigns: %d, want node0 alone", len(l))
	}
	return c, cands
}

func TestElectionOneLeaderAmongThree(t *testing.T) {
	c, cands := electThree(t)
	for sec := range 120 { // two minutes: 40 campaigns, 40 renewals
		c.advance(time.Second)
		if l := leaders(cands); len(l) != 1 || l[0] != cands[0] {
			t.Fatalf("+%ds: %d leaders, want node0 alone", sec+1, len(l))
		}
	}
	if n := acquisitions(cands); n != 1 {
		t.Fatalf("OnAcquired called %d times, want once", n)
	}
	acq, lost, _ := cands[0].snapshot()
	if len(lost) != 0 {
		t.Fatalf("OnLost called: %v", lost)
	}
	lead := acq[0]
	if lead.Key() != "leader" || !lead.Held() || lead.Context().Err() != nil {
		t.Fatalf("leadership lock %q, held %v, ctx %v", lead.Key(), lead.Held(), lead.Context().Err())
	}
	if got := c.holderOf("leader"); got != "node0" {
		t.Fatalf("store says %q leads", got)
	}
	if core.LockFromContext(lead.Context()) != lead {
		t.Fatal("LockFromContext(lead.Context()) is not the leadership lock")
	}
	evs := cands[0].eventsOf(core.EventLeadershipAcquired)
	if len(evs) != 1 || evs[0].Key != "leader" || evs[0].Token != lead.Token() || !evs[0].Time.Equal(clusterStart) {
		t.Fatalf("leadership events %+v, want one for \"leader\" with token %d at the start", evs, lead.Token())
	}
	for _, cd := range cands[1:] {
		if _, _, evs := cd.snapshot(); len(evs) != 0 {
			t.Fatalf("%s saw events %+v", cd.nd.name, evs)
		}
	}
	if lines := cands[0].nd.logs.Lines("level=INFO", `msg="leasehold: leadership acquired"`, "key=leader"); len(lines) != 1 {
		t.Fatalf("leadership acquired logged %d times", len(lines))
	}
}

func TestElectionHandoverOnClose(t *testing.T) {
	c, cands := electThree(t)
	c.advance(10 * time.Second)
	old, _, _ := cands[0].snapshot()

	if err := cands[0].nd.locks.Close(context.Background()); err != nil {
		t.Fatalf("Close: %v", err)
	}
	_, lost, _ := cands[0].snapshot()
	if len(lost) != 1 || lost[0] != nil {
		t.Fatalf("OnLost on Close = %v, want one call with nil", lost)
	}
	if cands[0].e.Leader() {
		t.Fatal("closed instance still leads")
	}
	if evs := cands[0].eventsOf(core.EventLeadershipLost); len(evs) != 1 || evs[0].Err != nil || evs[0].Token != old[0].Token() || evs[0].Key != "leader" {
		t.Fatalf("leadership-lost events %+v, want one with nil Err and token %d", evs, old[0].Token())
	}
	if got := c.holderOf("leader"); got == "node0" {
		t.Fatal("store says node0 leads after Close")
	}

	// Another instance leads at once, woken by the release: its campaign
	// runs on its clock without the clock moving (its next scheduled one
	// is ttl/3 away).
	cands[0].nd.paused = true
	for deadline := time.Now().Add(5 * time.Second); acquisitions(cands) < 2 && time.Now().Before(deadline); {
		for _, cd := range cands[1:] {
			cd.nd.clock.Advance(0) // runs what is due now, and nothing later
		}
		time.Sleep(time.Millisecond)
	}
	l := leaders(cands)
	if len(l) != 1 || l[0] == cands[0] {
		t.Fatalf("leaders after the hand-over, with the clock still: %d; want one, woken by the release", len(l))
	}
	if acquisitions(cands) != 2 {
		t.Fatalf("OnAcquired called %d times in all, want 2", acquisitions(cands))
	}
	acq, _, _ := l[0].snapshot()
	if acq[0].Token() <= old[0].Token() {
		t.Fatalf("new leader's token %d not above the old %d", acq[0].Token(), old[0].Token())
	}
	if evs := l[0].eventsOf(core.EventLeadershipAcquired); len(evs) != 1 || evs[0].Token != acq[0].Token() {
		t.Fatalf("new leader's events %+v", evs)
	}
	// And keeps it.
	c.advance(time.Minute)
	if got := leaders(cands); len(got) != 1 || got[0] != l[0] || acquisitions(cands) != 2 {
		t.Fatalf("leadership moved again")
	}
}

func TestElectionHandoverAfterAPause(t *testing.T) {
	c, cands := electThree(t)
	c.advance(4 * time.Second)
	old, _, _ := cands[0].snapshot()

	// node0 pauses. Its lease expires on the store's clock; another instance
	// takes it at its first campaign after that.
	cands[0].nd.paused = true
	expires := c.expiry("leader")
	paused := c.storeClock.Now()
	var newLeader *candidate
	for newLeader == nil && c.storeClock.Now().Sub(paused) < 2*electionTTL {
		c.advance(100 * time.Millisecond)
		for _, cd := range cands[1:] {
			if cd.e.Leader() {
				newLeader = cd
			}
		}
	}
	if newLeader == nil {
		t.Fatal("nobody took over from the paused leader")
	}
	took := c.storeClock.Now()
	if took.Before(expires) {
		t.Fatalf("taken over %v before the paused leader's lease expired", expires.Sub(took))
	}
	if took.Sub(expires) > electionTTL/3 {
		t.Fatalf("taken over %v after the expiry, want within a campaign (ttl/3)", took.Sub(expires))
	}
	if took.Sub(paused) > electionTTL+electionTTL/3 {
		t.Fatalf("taken over %v after the pause, want within ttl + ttl/3", took.Sub(paused))
	}
	acq, _, _ := newLeader.snapshot()
	if acq[0].Token() <= old[0].Token() {
		t.Fatalf("new leader's token %d not above the paused one's %d", acq[0].Token(), old[0].Token())
	}
	// The paused process has noticed nothing: on its own clock it still leads.
	if _, lost, _ := cands[0].snapshot(); len(lost) != 0 || old[0].Context().Err() != nil {
		t.Fatalf("paused leader was told before its clock moved: %v", lost)
	}

	// node0 resumes: its next renewal is refused.
	cands[0].nd.paused = false
	cands[0].nd.clock.Advance(electionTTL / 3)
	_, lost, _ := cands[0].snapshot()
	var ll *core.LockLostError
	if len(lost) != 1 || !errors.As(lost[0], &ll) || ll.Key != "leader" || ll.Token != old[0].Token() || ll.Reason != core.LostRefused {
		t.Fatalf("OnLost after the pause = %v, want one *LockLostError for the old token, refused", lost)
	}
	if cause := context.Cause(old[0].Context()); !errors.As(cause, &ll) {
		t.Fatalf("old leadership's context cause = %v", cause)
	}
	if cands[0].e.Leader() {
		t.Fatal("node0 still leads after the refused renewal")
	}
	if evs := cands[0].eventsOf(core.EventLeadershipLost); len(evs) != 1 || !errors.As(evs[0].Err, &ll) || evs[0].Token != old[0].Token() {
		t.Fatalf("leadership-lost events %+v", evs)
	}
	if evs := cands[0].eventsOf(core.EventLockLost); len(evs) != 1 || evs[0].Key != "leader" {
		t.Fatalf("lock-lost events %+v", evs)
	}
	// From now on node0 campaigns again, and loses to the live leader.
	c.advance(time.Minute)
	if l := leaders(cands); len(l) != 1 || l[0] != newLeader {
		t.Fatalf("%d leaders after node0 resumed", len(l))
	}
	if acquisitions(cands) != 2 {
		t.Fatalf("OnAcquired called %d times in all, want 2", acquisitions(cands))
	}
}

func TestElectionStepsDownWhenOnAcquiredFails(t *testing.T) {
	for _, tc := range []struct {
		name string
		fn   func(*core.Lock) error
		want string
	}{
		{"error", func(*core.Lock) error { return errors.New("cache not warm") }, "cache not warm"},
		{"panic", func(*core.Lock) error { panic("nil pointer") }, "OnAcquired panicked: nil pointer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, cands := newElectionCluster(t, 3)
			cands[0].onAcquired = tc.fn
			cands[0].elect(t, "leader")

			acq, lost, _ := cands[0].snapshot()
			if len(acq) != 1 {
				t.Fatalf("OnAcquired called %d times", len(acq))
			}
			if len(lost) != 1 || lost[0] == nil || !strings.Contains(lost[0].Error(), tc.want) {
				t.Fatalf("OnLost = %v, want the callback's %q", lost, tc.want)
			}
			if cands[0].e.Leader() || acq[0].Context().Err() == nil {
				t.Fatal("node0 still leads after its OnAcquired failed")
			}
			if got := c.holderOf("leader"); got != "" {
				t.Fatalf("store says %q leads: node0 did not step down", got)
			}
			evs := cands[0].eventsOf(core.EventLeadershipLost)
			if len(evs) != 1 || evs[0].Err == nil || !strings.Contains(evs[0].Err.Error(), tc.want) || evs[0].Token != acq[0].Token() {
				t.Fatalf("leadership-lost events %+v", evs)
			}
			if lines := cands[0].nd.logs.Lines("level=ERROR", "leader stepping down: OnAcquired failed"); len(lines) != 1 {
				t.Fatalf("step-down logged %d times", len(lines))
			}

			// Another instance leads.
			cands[1].elect(t, "leader")
			cands[2].elect(t, "leader")
			if l := leaders(cands); len(l) != 1 || l[0] != cands[1] {
				t.Fatalf("%d leaders after node0 stepped down, want node1", len(l))
			}
			c.advance(time.Minute)
			if l := leaders(cands); len(l) != 1 || l[0] != cands[1] {
				t.Fatalf("%d leaders a minute later, want node1", len(l))
			}
		})
	}
}

func TestElectionStop(t *testing.T) {
	c, cands := electThree(t)
	// A candidate that does not lead stops quietly.
	if err := cands[2].e.Stop(context.Background()); err != nil {
		t.Fatalf("Stop of a follower: %v", err)
	}
	if _, lost, evs := cands[2].snapshot(); len(lost) != 0 || len(evs) != 0 {
		t.Fatalf("follower's Stop reported %v, %v", lost, evs)
	}
	// The leader steps down.
	if err := cands[0].e.Stop(context.Background()); err != nil {
		t.Fatalf("Stop of the leader: %v", err)
	}
	if _, lost, _ := cands[0].snapshot(); len(lost) != 1 || lost[0] != nil {
		t.Fatalf("OnLost on Stop = %v, want nil once", lost)
	}
	if err := cands[0].e.Stop(context.Background()); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
	// Only node1 campaigns now: stopped candidates never lead again.
	for range 60 {
		c.advance(time.Second)
		if cands[0].e.Leader() || cands[2].e.Leader() {
			t.Fatal("a stopped candidate leads")
		}
	}
	if l := leaders(cands); len(l) != 1 || l[0] != cands[1] {
		t.Fatalf("%d leaders, want node1", len(l))
	}
	if acquisitions(cands) != 2 {
		t.Fatalf("OnAcquired called %d times, want 2", acquisitions(cands))
	}
}

func TestElectBadArguments(t *testing.T) {
	c, _ := newElectionCluster(t, 1)
	l := c.nodes[0].locks
	ok := func(*core.Lock) error { return nil }
	if _, err := l.Elect("k", core.Campaign{}); !errors.Is(err, core.ErrInvalidArgument) {
		t.Fatalf("nil OnAcquired: %v", err)
	}
	if _, err := l.Elect("", core.Campaign{OnAcquired: ok}); !errors.Is(err, core.ErrInvalidKey) {
		t.Fatalf("empty key: %v", err)
	}
	if _, err := l.Elect("k", core.Campaign{OnAcquired: ok, TTL: time.Microsecond}); !errors.Is(err, core.ErrInvalidTTL) {
		t.Fatalf("bad ttl: %v", err)
	}
	if _, err := l.Elect("k", core.Campaign{OnAcquired: ok}); err != nil {
		t.Fatalf("Elect after the refusals: %v", err)
	}
	if _, err := l.Elect("k", core.Campaign{OnAcquired: ok}); !errors.Is(err, core.ErrDuplicateKey) {
		t.Fatalf("second election on k: %v", err)
	}
	if err := l.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Elect("k2", core.Campaign{OnAcquired: ok}); !errors.Is(err, core.ErrClosed) {
		t.Fatalf("Elect after Close: %v", err)
	}
}

func TestElectAgainAfterStop(t *testing.T) {
	clock := core.NewManualClock(t0)
	store := core.NewMemoryStore(core.WithMemoryClock(clock))
	l := coretest.NewLocks(t, store, core.WithClock(clock))
	campaign := core.Campaign{OnAcquired: func(*core.Lock) error { return nil }}
	e, err := l.Elect("feed", campaign)
	if err != nil {
		t.Fatal(err)
	}
	other, err := l.Elect("other-feed", campaign)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	again, err := l.Elect("feed", campaign)
	if err != nil {
		t.Fatalf("Elect after Stop on the same key: %v; want the key free again", err)
	}
	if !again.Leader() {
		t.Fatal("the new candidacy does not lead, though the old one stepped down")
	}
	if err := l.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if again.Leader() || other.Leader() {
		t.Fatal("Close left an election leading: every candidacy must step down")
	}
}
