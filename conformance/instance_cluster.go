package conformance

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leasehold/leasehold/core"
)

// A cluster is a service of several core.Locks instances ("i0", "i1", …)
// sharing the case's one store, as the processes of a deployment share one
// database. Each instance has a core.ManualClock of its own, so the case
// decides who is alive and who is paused: an instance whose clock does not
// move renews nothing and notices nothing, like a process stopped by a long
// garbage collection or a frozen VM. Expiry is the store's business, on the
// store's own clock.
//
// Time passes in one of two ways:
//
//   - With Options.AdvanceTime (a store on a clock the test controls), the
//     case moves time with elapse: the store's clock first, through
//     AdvanceTime, then the clock of every instance that is not paused, in
//     steps of a fraction of the ttl, so that renewals go out in order. Nothing
//     sleeps.
//   - Without it (a real server, whose clock is real time), a pump goroutine
//     per instance brings its clock up to real time every few milliseconds,
//     unless the instance is paused; elapse sleeps. A paused instance's clock
//     stays where it was, and catches up all at once when it resumes.
//
// The cluster's helpers call t only from the case's goroutine; what the
// instances' callbacks see is recorded and checked there.
type cluster struct {
	t       testing.TB
	e       *env
	ttl     time.Duration // the ttl of every job and election: Options.TTL
	step    time.Duration // how far clocks move at a time
	virtual bool          // Options.AdvanceTime is set
	start   time.Time     // real time at which the cluster started
	moved   time.Duration // with AdvanceTime: how far elapse moved the store's clock
	nodes   []*node

	stopPumps chan struct{}
	pumps     sync.WaitGroup
}

// node is one instance of the cluster.
type node struct {
	name  string
	c     *cluster
	clock *core.ManualClock
	locks *core.Locks

	mu     sync.Mutex    // held while the clock moves, so pause waits for a move in progress
	paused atomic.Bool   // set under mu
	behind time.Duration // with AdvanceTime: how far the store's clock moved while paused
	synced time.Time     // without: the real time the clock was last brought up to

	job      *core.Job
	election *core.Election

	rec      sync.Mutex // guards what the instance's callbacks record
	runs     []*core.Lock
	acquired []acquisition
	lost     []error
	events   []core.Event
	calls    []nodeCall // the instance's store calls, in real time
}

// nodeCall is one store call of an instance, for failure messages: when it
// started and when it was answered, in real time since the cluster started.
type nodeCall struct {
	op         core.OpType
	start, end time.Duration
}

// acquisition is one call of an election's OnAcquired.
type acquisition struct {
	lead *core.Lock
	at   time.Time // on the instance's own clock
}

// awaitBound bounds a wait on another goroutine (a run reaching its body, a
// Run returning): it catches a deadlock, not a slow store, so it is long.
func (e *env) awaitBound() time.Duration { return 2*e.opts.Timeout + 5*time.Second }

// newCluster starts n instances on the case's store. They are closed when
// the case ends, whatever its outcome, so that no lock is left on a shared
// server.
func newCluster(t testing.TB, e *env, n int) *cluster {
	t.Helper()
	c := &cluster{
		t:         t,
		e:         e,
		ttl:       e.opts.TTL,
		virtual:   e.opts.AdvanceTime != nil,
		start:     time.Now(),
		stopPumps: make(chan struct{}),
	}
	if c.virtual {
		c.step = c.ttl / 24
	} else {
		c.step = min(max(c.ttl/50, time.Millisecond), 20*time.Millisecond)
	}
	quiet := slog.New(slog.DiscardHandler)
	for i := range n {
		// Each instance calls through a store of its own, as the
		// processes of a service each have a client: i0 through the
		// case's first store, the others through new ones.
		store := e.store
		if i > 0 {
			store = e.open()
		}
		nd := &node{
			name:   fmt.Sprintf("i%d", i),
			c:      c,
			clock:  core.NewManualClock(c.start),
			synced: c.start,
		}
		var timer core.Observer
		if !c.virtual {
			timer = callTimer{t, nd}
		}
		l, err := core.New(store,
			core.WithClock(nd.clock),
			core.WithLogger(quiet),
			core.WithEventHandler(nd.handle),
			core.WithObserver(timer),
			core.WithDefaultTTL(c.ttl),
			core.WithInstanceName(fmt.Sprintf("%s:%s:%s", e.opts.KeyPrefix, e.name, nd.name)))
		if err != nil {
			c.closeAll()
			failWith(t, fixKitBug, "core.New on the store under test returned an error: %v", err)
		}
		nd.locks = l
		c.nodes = append(c.nodes, nd)
	}
	t.Cleanup(c.closeAll)
	if !c.virtual {
		// Opening the instances' stores takes real time (a client's
		// handshake, a dialect's version query: seconds under load). The
		// clocks catch up with it before anything is scheduled on them:
		// a campaign sent while its clock still read the start would date
		// its lease seconds back, and lose it as soon as the clock moved.
		now := time.Now()
		for _, nd := range c.nodes {
			nd.clock.Advance(now.Sub(nd.synced))
			nd.synced = now
			c.pumps.Go(nd.pump)
		}
	}
	return c
}

// callTimer notes how long each store call of an instance took, in real
// time, for the judge's slow-call rule: an instance whose renewal took
// longer than the case allows loses or skips for the machine's sake, not
// the store's. (With AdvanceTime, clocks wait for the calls, so their
// duration decides nothing.)
type callTimer struct {
	t  testing.TB
	nd *node
}

func (ct callTimer) Start(ctx context.Context, op core.Op) (context.Context, func(bool, error)) {
	switch op.Type {
	case core.OpAcquire, core.OpRenew, core.OpRelease:
		start := time.Now()
		return ctx, func(bool, error) {
			end := time.Now()
			noteCall(ct.t, end.Sub(start))
			ct.nd.rec.Lock()
			defer ct.nd.rec.Unlock()
			c := ct.nd.c
			ct.nd.calls = append(ct.nd.calls, nodeCall{op.Type, start.Sub(c.start), end.Sub(c.start)})
		}
	}
	return ctx, func(bool, error) {}
}

// closeAll closes every instance with a context that is already done, so
// that Close waits on no clock: it still hands every lock back to the store
// (leases, run locks, leaderships), and cancels runs still in progress.
// Then it stops the pumps.
func (c *cluster) closeAll() {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, nd := range c.nodes {
		_ = nd.locks.Close(ctx)
	}
	select {
	case <-c.stopPumps:
	default:
		close(c.stopPumps)
	}
	c.pumps.Wait()
}

// pump brings the instance's clock up to real time every step, unless it is
// paused.
func (nd *node) pump() {
	tick := time.NewTicker(nd.c.step)
	defer tick.Stop()
	for {
		select {
		case <-nd.c.stopPumps:
			return
		case <-tick.C:
			nd.mu.Lock()
			if !nd.paused.Load() {
				now := time.Now()
				nd.clock.Advance(now.Sub(nd.synced))
				nd.synced = now
			}
			nd.mu.Unlock()
		}
	}
}

// now is how much time has passed for the cluster: on the store's clock
// with AdvanceTime, in real time without.
func (c *cluster) now() time.Duration {
	if c.virtual {
		return c.moved
	}
	return time.Since(c.start)
}

// clockAt converts a time read on a live instance's clock to the cluster's
// time. Every clock starts at the cluster's start and moves by the time that
// passes for the store (with AdvanceTime) or by the real time elapsed (the
// pump), so a live instance's clock reads the cluster's time as of its last
// move: never ahead of it, and behind only by a pump step or a call in
// flight.
func (c *cluster) clockAt(at time.Time) time.Duration { return at.Sub(c.start) }

// elapse lets d pass for the store and for every instance that is not paused.
func (c *cluster) elapse(d time.Duration) {
	if !c.virtual {
		time.Sleep(d)
		return
	}
	for d > 0 {
		s := min(d, c.step)
		c.e.advance(s)
		c.moved += s
		for _, nd := range c.nodes {
			nd.mu.Lock()
			if nd.paused.Load() {
				nd.behind += s
			} else {
				nd.clock.Advance(s)
			}
			nd.mu.Unlock()
		}
		d -= s
	}
}

// elapseOn lets d pass, and then, in real time, waits until nd's own clock
// reads at least since + d: its pump moves it only as fast as the renewals
// that each move sends are answered.
func (c *cluster) elapseOn(nd *node, since time.Time, d time.Duration) {
	c.elapse(d)
	if c.virtual {
		return
	}
	bound := time.Now().Add(c.e.awaitBound())
	for nd.clock.Now().Sub(since) < d && time.Now().Before(bound) {
		time.Sleep(c.step)
	}
}

// pause stops the instance's clock: from now on it renews nothing and
// notices nothing. A move of its clock in progress (and the renewals it
// sends) completes first.
func (nd *node) pause() {
	nd.mu.Lock()
	defer nd.mu.Unlock()
	nd.paused.Store(true)
}

// resume moves the paused instance's clock by all the time it missed, at
// once, as a process does when it wakes up: its overdue timers fire in
// order, and resume returns once the renewals they sent have been answered.
func (nd *node) resume() {
	nd.mu.Lock()
	defer nd.mu.Unlock()
	nd.paused.Store(false)
	if nd.c.virtual {
		nd.clock.Advance(nd.behind)
		nd.behind = 0
		return
	}
	now := time.Now()
	nd.clock.Advance(now.Sub(nd.synced))
	nd.synced = now
}

// closeNode closes nd with a live context bounded by Options.Timeout, as a
// service shutting down cleanly does. Its clock keeps moving meanwhile (in
// real time, through its pump), since Close may wait on it.
func (c *cluster) closeNode(nd *node) error {
	ctx, cancel := context.WithTimeout(context.Background(), c.e.opts.Timeout)
	defer cancel()
	return nd.locks.Close(ctx)
}

// await waits for a value from another goroutine of the case, such as a run
// reaching its body. The bound catches a deadlock, not a slow store.
func await[T any](t testing.TB, e *env, ch <-chan T, what string) T {
	t.Helper()
	timer := time.NewTimer(e.awaitBound())
	defer timer.Stop()
	select {
	case v := <-ch:
		return v
	case <-timer.C:
		failWith(t, "make every store call return, with an answer or an error, within Options.Timeout: a call that hangs holds up the instance that made it.", "%s did not happen within %v of real time", what, e.awaitBound())
		panic("unreachable")
	}
}

// ---------------------------------------------------------------------------
// Jobs

// addJob registers the same job, under key, on every instance, with the
// cluster's ttl. body is what a run does after the run is recorded; nil
// returns at once.
func (c *cluster) addJob(key string, body func(nd *node, ctx context.Context) error, opts ...core.JobOption) {
	c.t.Helper()
	for _, nd := range c.nodes {
		job, err := nd.locks.Job(func(ctx context.Context) error {
			nd.rec.Lock()
			nd.runs = append(nd.runs, core.LockFromContext(ctx))
			nd.rec.Unlock()
			if body == nil {
				return nil
			}
			return body(nd, ctx)
		}, append(opts, core.WithJobKey(key), core.WithJobTTL(c.ttl))...)
		if err != nil {
			failWith(c.t, fixKitBug, "%s: Locks.Job(%s) returned an error: %v", nd.name, show(key), err)
		}
		nd.job = job
	}
}

// handle records the instance's events. Core calls it synchronously from
// the goroutine that noticed the event: a lock lost at a refused renewal is
// recorded before the clock's Advance returns.
func (nd *node) handle(ev core.Event) {
	nd.rec.Lock()
	defer nd.rec.Unlock()
	nd.events = append(nd.events, ev)
}

// lostLocks returns the EventLockLost events the instance has seen.
func (nd *node) lostLocks() []core.Event {
	nd.rec.Lock()
	defer nd.rec.Unlock()
	var out []core.Event
	for _, ev := range nd.events {
		if ev.Type == core.EventLockLost {
			out = append(out, ev)
		}
	}
	return out
}

// lostLate tells the judge when every loss in lost came from renewals that
// were not confirmed in time (core.LostDeadline) rather than refused: the
// store's calls took longer than the case allows (a renewal sent at ttl/3
// not back by the deadline, about 2/3 of the ttl later), or the process
// ran late. Such a failure proves nothing about the store's answers.
func lostLate(t testing.TB, lost []core.Event, ttl time.Duration) {
	for _, ev := range lost {
		var ll *core.LockLostError
		if !errors.As(ev.Err, &ll) || ll.Reason != core.LostDeadline {
			return
		}
	}
	noteCall(t, ttl*2/3)
}

// lateLosses tells the judge, through lostLate, when every lock the
// instances lost came from renewals not confirmed in time, in real time. In a case where
// no instance pauses, any loss is unexpected, and a late one is the
// machine's: call it before failing such a case.
func (c *cluster) lateLosses(t testing.TB) {
	if c.virtual {
		// Clocks move only as fast as the store answers: a renewal past
		// its deadline failed, it did not come back late.
		return
	}
	var lost []core.Event
	for _, nd := range c.nodes {
		lost = append(lost, nd.lostLocks()...)
	}
	if len(lost) > 0 {
		lostLate(t, lost, c.ttl)
	}
}

// runCount returns how many runs of the job the instance has started.
func (nd *node) runCount() int {
	nd.rec.Lock()
	defer nd.rec.Unlock()
	return len(nd.runs)
}

// lastRun returns the lock of the instance's last run (the run lock with
// WithoutOverlapping, else the lease), nil if it never ran.
func (nd *node) lastRun() *core.Lock {
	nd.rec.Lock()
	defer nd.rec.Unlock()
	if len(nd.runs) == 0 {
		return nil
	}
	return nd.runs[len(nd.runs)-1]
}

// tickResult is what one instance's Job.Run returned for one tick.
type tickResult struct {
	nd  *node
	err error
	ran bool // the job's function was called
}

// tick fires one tick of the job on the instances given by index, in that
// order (all, in order, if none is given), skipping paused ones: each calls
// Job.Run, as its scheduler would.
func (c *cluster) tick(order ...int) []tickResult {
	if len(order) == 0 {
		for i := range c.nodes {
			order = append(order, i)
		}
	}
	var out []tickResult
	for _, i := range order {
		nd := c.nodes[i]
		if nd.paused.Load() {
			continue
		}
		before := nd.runCount()
		err := nd.job.Run(context.Background())
		out = append(out, tickResult{nd: nd, err: err, ran: nd.runCount() > before})
	}
	return out
}

// runAsync calls nd's Job.Run in a goroutine of its own and delivers its
// result.
func runAsync(nd *node) <-chan error {
	ch := make(chan error, 1)
	go func() { ch <- nd.job.Run(context.Background()) }()
	return ch
}

// ran returns the instances that ran in a tick.
func ran(res []tickResult) []*node {
	var out []*node
	for _, r := range res {
		if r.ran {
			out = append(out, r.nd)
		}
	}
	return out
}

// describeTick says what each instance did in a tick, for failure messages.
func describeTick(res []tickResult) string {
	var parts []string
	for _, r := range res {
		var what string
		var skipped *core.SkippedError
		switch {
		case r.ran && r.err == nil:
			what = "ran"
		case r.ran:
			what = fmt.Sprintf("ran and returned %v", r.err)
		case errors.As(r.err, &skipped):
			what = "skipped: " + skipped.Reason.String()
		case r.err == nil:
			what = "returned nil without running"
		default:
			what = fmt.Sprintf("failed: %v", r.err)
		}
		parts = append(parts, r.nd.name+" "+what)
	}
	if len(parts) == 0 {
		return "no instance ticked"
	}
	return strings.Join(parts, "; ")
}

// skippedFor reports whether err is a *core.SkippedError with reason.
func skippedFor(err error, reason core.SkipReason) bool {
	var skipped *core.SkippedError
	return errors.As(err, &skipped) && skipped.Reason == reason
}

// allSkipped fails the case unless every instance in res skipped the tick
// for reason; when says which tick and why it must be skipped.
func allSkipped(t testing.TB, res []tickResult, reason core.SkipReason, when string) {
	t.Helper()
	for _, r := range res {
		if r.ran || !skippedFor(r.err, reason) {
			t.Fatalf("%s: %s; every instance must skip the tick (%s): %s", when, describeTick(res), reason, why(reason))
		}
	}
}

func why(reason core.SkipReason) string {
	switch reason {
	case core.SkipOtherInstance:
		return "the store must refuse the job's lease to every instance but its live owner"
	case core.SkipRunInProgress:
		return "the store must refuse the run lock while the run that holds it is in progress and renews it"
	}
	return reason.String()
}

// ---------------------------------------------------------------------------
// Elections

// elect makes every instance a candidate for key, in order, with the
// cluster's ttl; the first to campaign takes a free key at once.
func (c *cluster) elect(key string) {
	c.t.Helper()
	for _, nd := range c.nodes {
		e, err := nd.locks.Elect(key, core.Campaign{
			TTL: c.ttl,
			OnAcquired: func(lead *core.Lock) error {
				nd.rec.Lock()
				defer nd.rec.Unlock()
				nd.acquired = append(nd.acquired, acquisition{lead: lead, at: nd.clock.Now()})
				return nil
			},
			OnLost: func(err error) {
				nd.rec.Lock()
				defer nd.rec.Unlock()
				nd.lost = append(nd.lost, err)
			},
		})
		if err != nil {
			failWith(c.t, fixKitBug, "%s: Locks.Elect(%s) returned an error: %v", nd.name, show(key), err)
		}
		nd.election = e
	}
}

// record returns copies of what the instance's election callbacks saw.
func (nd *node) record() ([]acquisition, []error) {
	nd.rec.Lock()
	defer nd.rec.Unlock()
	return append([]acquisition(nil), nd.acquired...), append([]error(nil), nd.lost...)
}

// leaders returns the instances whose Election.Leader is true, among nodes
// (all of the cluster's if none are given).
func (c *cluster) leaders(nodes ...*node) []*node {
	if len(nodes) == 0 {
		nodes = c.nodes
	}
	var out []*node
	for _, nd := range nodes {
		if nd.election != nil && nd.election.Leader() {
			out = append(out, nd)
		}
	}
	return out
}

// acquisitions counts the OnAcquired calls of every instance.
func (c *cluster) acquisitions() int {
	n := 0
	for _, nd := range c.nodes {
		acq, _ := nd.record()
		n += len(acq)
	}
	return n
}

// names renders instances for failure messages.
func names(nodes []*node) string {
	if len(nodes) == 0 {
		return "none"
	}
	var out []string
	for _, nd := range nodes {
		out = append(out, nd.name)
	}
	return strings.Join(out, ", ")
}

// describeElection says who leads and what the callbacks saw, for failure
// messages.
func (c *cluster) describeElection() string {
	var parts []string
	for _, nd := range c.nodes {
		acq, lost := nd.record()
		tokens := make([]int64, len(acq))
		for i, a := range acq {
			tokens[i] = a.lead.Token()
		}
		leader := nd.election != nil && nd.election.Leader()
		parts = append(parts, fmt.Sprintf("%s: Leader() %v, OnAcquired with tokens %v, OnLost %v", nd.name, leader, tokens, lost))
	}
	return strings.Join(parts, "; ") + "; " + c.timeline()
}

// timeline lists what each instance saw and sent, on the cluster's time:
// its events by its own clock, its store calls in real time (from their
// start to their answer), and how far its clock had come. It tells a
// renewal that was not sent from one that came back late.
func (c *cluster) timeline() string {
	ms := func(d time.Duration) string { return fmt.Sprintf("%dms", d.Milliseconds()) }
	var parts []string
	for _, nd := range c.nodes {
		nd.rec.Lock()
		var seen []string
		for _, ev := range nd.events {
			seen = append(seen, fmt.Sprintf("%s at %s", ev.Type, ms(c.clockAt(ev.Time))))
		}
		for _, cl := range nd.calls {
			seen = append(seen, fmt.Sprintf("%s %s-%s", cl.op, ms(cl.start), ms(cl.end)))
		}
		nd.rec.Unlock()
		parts = append(parts, fmt.Sprintf("%s (clock at %s): %s", nd.name, ms(c.clockAt(nd.clock.Now())), strings.Join(seen, ", ")))
	}
	return fmt.Sprintf("timeline at %s of real time: %s", ms(c.now()), strings.Join(parts, "; "))
}
