package core_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leasehold/leasehold/core"
	"github.com/leasehold/leasehold/core/coretest"
)

// The job and election tests model a service of N instances as N Locks, each
// on its own ManualClock, sharing one MemoryStore on a clock of its own. A
// tick is a call of Job.Run on each instance. A paused instance is one whose
// clock is not advanced; a dead one is paused and never ticks again.

// clusterStart is where every clock of a cluster starts.
var clusterStart = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

const (
	jobTTL  = 9 * time.Second // renewals every 3s
	tickGap = time.Second     // a tick every second
)

type jobNode struct {
	name   string
	clock  *core.ManualClock
	locks  *core.Locks
	logs   *coretest.LogBuffer
	job    *core.Job
	paused bool
	runs   atomic.Int64
}

type jobCluster struct {
	t          *testing.T
	storeClock *core.ManualClock
	store      *core.MemoryStore
	nodes      []*jobNode
}

// newJobCluster starts n instances, named node0…, logging at debug into
// their own buffers. They are closed, without waiting, when the test ends.
func newJobCluster(t *testing.T, n int, opts ...core.Option) *jobCluster {
	t.Helper()
	c := &jobCluster{t: t, storeClock: core.NewManualClock(clusterStart)}
	c.store = core.NewMemoryStore(core.WithMemoryClock(c.storeClock))
	for i := range n {
		c.nodes = append(c.nodes, c.newNode(fmt.Sprintf("node%d", i), c.store, opts...))
	}
	return c
}

func (c *jobCluster) newNode(name string, store core.LockStore, opts ...core.Option) *jobNode {
	c.t.Helper()
	nd := &jobNode{name: name, clock: core.NewManualClock(clusterStart), logs: &coretest.LogBuffer{}}
	all := append([]core.Option{core.WithClock(nd.clock), core.WithLogger(nd.logs.Logger()), core.WithInstanceName(name)}, opts...)
	l, err := core.New(store, all...)
	if err != nil {
		c.t.Fatalf("New: %v", err)
	}
	nd.locks = l
	c.t.Cleanup(func() {
		// A done context: nothing waits on a clock nobody advances.
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_ = l.Close(ctx)
	})
	return nd
}

// addJob registers a job on every instance; fn makes each instance's body.
// A body counts its runs on nd.runs before it calls the body.
func (c *jobCluster) addJob(fn func(nd *jobNode) func(ctx context.Context) error, opts ...core.JobOption) {
	c.t.Helper()
	for _, nd := range c.nodes {
		body := func(ctx context.Context) error { return nil }
		if fn != nil {
			body = fn(nd)
		}
		job, err := nd.locks.Job(func(ctx context.Context) error {
			nd.runs.Add(1)
			return body(ctx)
		}, opts...)
		if err != nil {
			c.t.Fatalf("%s: Job: %v", nd.name, err)
		}
		nd.job = job
	}
}

// advance moves the store's clock and every running instance's by d, a
// second at a time, the store first (as a store's clock is never behind
// the holder's view of it in these tests).
func (c *jobCluster) advance(d time.Duration) {
	for d > 0 {
		step := min(d, time.Second)
		c.storeClock.Advance(step)
		for _, nd := range c.nodes {
			if !nd.paused {
				nd.clock.Advance(step)
			}
		}
		d -= step
	}
}

// tick calls Run on the running instances, in the order given (all, in
// order, if none is given), and returns their results by instance.
func (c *jobCluster) tick(order ...int) map[*jobNode]error {
	c.t.Helper()
	if len(order) == 0 {
		for i := range c.nodes {
			order = append(order, i)
		}
	}
	out := make(map[*jobNode]error)
	for _, i := range order {
		nd := c.nodes[i]
		if nd.paused {
			continue
		}
		out[nd] = nd.job.Run(context.Background())
	}
	return out
}

// totalRuns adds up the runs of every instance.
func (c *jobCluster) totalRuns() int64 {
	var n int64
	for _, nd := range c.nodes {
		n += nd.runs.Load()
	}
	return n
}

// holderOf returns the name of the instance whose owner id holds key, "" if
// none does.
func (c *jobCluster) holderOf(key string) string {
	c.t.Helper()
	infos, err := c.store.List(context.Background(), "")
	if err != nil {
		c.t.Fatalf("List: %v", err)
	}
	for _, info := range infos {
		if info.Key == key {
			name, _, _ := strings.Cut(info.Owner, "/")
			return name
		}
	}
	return ""
}

// expiry returns when key's live lock expires on the store's clock.
func (c *jobCluster) expiry(key string) time.Time {
	c.t.Helper()
	infos, err := c.store.List(context.Background(), key)
	if err != nil {
		c.t.Fatalf("List: %v", err)
	}
	for _, info := range infos {
		if info.Key == key {
			return c.storeClock.Now().Add(info.ExpiresIn)
		}
	}
	c.t.Fatalf("no live lock on %q", key)
	return time.Time{}
}

// pollUntil waits, in real time, for cond: for something another goroutine
// does (a Run reaching its body, Close starting to wait on its clock).
func pollUntil(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		runtime.Gosched()
		time.Sleep(100 * time.Microsecond)
	}
}

// recvWithin returns the next value of ch, failing the test if none comes
// within 10s of real time (a deadlock, not a timing assumption).
func recvWithin[T any](t testing.TB, what string, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

// notYet fails the test if ch already has a value.
func notYet[T any](t testing.TB, what string, ch <-chan T) {
	t.Helper()
	select {
	case v := <-ch:
		t.Fatalf("%s already happened (%v)", what, v)
	default:
	}
}

func skipReason(err error) (core.SkipReason, bool) {
	var se *core.SkippedError
	if errors.As(err, &se) {
		return se.Reason, true
	}
	return 0, false
}

// runAsync calls job.Run in a goroutine and delivers its result.
func runAsync(job *core.Job, ctx context.Context) <-chan error {
	ch := make(chan error, 1)
	go func() { ch <- job.Run(ctx) }()
	return ch
}

// ---------------------------------------------------------------------------
// On one instance

func TestOnOneInstanceIsStickyAcrossManyTicks(t *testing.T) {
	c := newJobCluster(t, 3)
	c.addJob(nil, core.WithJobKey("report"), core.OnOneInstance(), core.WithJobTTL(jobTTL))

	// The order in which instances fire changes from tick to tick, as it
	// would with unsynchronised clocks; the owner must not.
	orders := [][]int{{0, 1, 2}, {2, 1, 0}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}}
	var owner *jobNode
	for tick := range 300 { // five minutes of ticks, over many renewals
		before := c.totalRuns()
		res := c.tick(orders[tick%len(orders)]...)
		if got := c.totalRuns() - before; got != 1 {
			t.Fatalf("tick %d: %d runs, want exactly 1", tick, got)
		}
		for nd, err := range res {
			if nd.runs.Load() > 0 && owner == nil {
				owner = nd
			}
			if nd == owner {
				if err != nil {
					t.Fatalf("tick %d: owner %s: Run = %v", tick, nd.name, err)
				}
				continue
			}
			if r, ok := skipReason(err); !ok || r != core.SkipOtherInstance {
				t.Fatalf("tick %d: %s: Run = %v, want a *SkippedError with SkipOtherInstance", tick, nd.name, err)
			}
			if !errors.Is(err, core.ErrSkipped) {
				t.Fatalf("tick %d: %v does not match ErrSkipped", tick, err)
			}
		}
		if owner.runs.Load() != int64(tick+1) {
			t.Fatalf("tick %d: owner %s ran %d times, want every tick", tick, owner.name, owner.runs.Load())
		}
		c.advance(tickGap)
	}
	if owner != c.nodes[0] {
		t.Fatalf("owner is %s, want node0, whose tick fired first", owner.name)
	}
	if got := c.holderOf("report:owner"); got != "node0" {
		t.Fatalf("lease held by %q, want node0", got)
	}
	for _, nd := range c.nodes[1:] {
		lines := nd.logs.Lines("level=DEBUG", `msg="leasehold: job tick skipped"`, "key=report", `reason="it runs on another instance"`)
		if len(lines) != 300 {
			t.Fatalf("%s logged %d skip lines, want 300:\n%s", nd.name, len(lines), nd.logs.String())
		}
	}
	if lines := c.nodes[0].logs.Lines("leasehold: job lease taken; this instance runs the job", "key=report"); len(lines) != 1 {
		t.Fatalf("owner logged the lease taken %d times, want once", len(lines))
	}
}

func TestOnOneInstanceHandsOverAfterTheOwnerDies(t *testing.T) {
	c := newJobCluster(t, 3)
	c.addJob(nil, core.WithJobKey("report"), core.OnOneInstance(), core.WithJobTTL(jobTTL))

	for range 10 {
		c.tick()
		c.advance(tickGap)
	}
	owner := c.nodes[0]
	if owner.runs.Load() != 10 || c.totalRuns() != 10 {
		t.Fatalf("runs before the death: node0 %d, all %d; want 10, 10", owner.runs.Load(), c.totalRuns())
	}

	// node0 dies: it neither ticks nor renews again, and is never closed.
	owner.paused = true
	expires := c.expiry("report:owner")
	died := c.storeClock.Now()
	if gap := expires.Sub(died); gap <= 0 || gap > jobTTL {
		t.Fatalf("lease expires %v after the death, want within ttl", gap)
	}

	var newOwner *jobNode
	for tick := range 20 {
		now := c.storeClock.Now()
		before := c.totalRuns()
		res := c.tick(2, 1) // node2 fires first from now on
		ran := c.totalRuns() - before
		switch {
		case now.Before(expires):
			if ran != 0 {
				t.Fatalf("tick %d at +%v: %d runs while the dead owner's lease is live", tick, now.Sub(died), ran)
			}
			for nd, err := range res {
				if r, _ := skipReason(err); r != core.SkipOtherInstance {
					t.Fatalf("%s: Run = %v, want SkipOtherInstance", nd.name, err)
				}
			}
		case newOwner == nil:
			// The first tick at or after the expiry takes over.
			if ran != 1 || c.nodes[2].runs.Load() != 1 {
				t.Fatalf("first tick after the expiry (+%v): %d runs, node2 %d; want node2 to take over", now.Sub(died), ran, c.nodes[2].runs.Load())
			}
			if now.Sub(expires) >= tickGap {
				t.Fatalf("took over %v after the expiry, want the first tick", now.Sub(expires))
			}
			newOwner = c.nodes[2]
		default:
			if ran != 1 || res[newOwner] != nil {
				t.Fatalf("tick %d: %d runs, new owner's Run = %v; want exactly one run, on the new owner", tick, ran, res[newOwner])
			}
			if r, _ := skipReason(res[c.nodes[1]]); r != core.SkipOtherInstance {
				t.Fatalf("node1: Run = %v, want SkipOtherInstance", res[c.nodes[1]])
			}
		}
		c.advance(tickGap)
	}
	if newOwner == nil {
		t.Fatal("nobody took over")
	}
	if got := c.holderOf("report:owner"); got != "node2" {
		t.Fatalf("lease held by %q, want node2", got)
	}
	if owner.runs.Load() != 10 {
		t.Fatalf("the dead owner ran %d times, want 10", owner.runs.Load())
	}
}

func TestOnOneInstanceHandsOverAfterCleanShutdown(t *testing.T) {
	c := newJobCluster(t, 3)
	c.addJob(nil, core.WithJobKey("report"), core.OnOneInstance(), core.WithJobTTL(jobTTL))
	for range 5 {
		c.tick()
		c.advance(tickGap)
	}
	// The last run started a second ago: Close does not wait.
	if err := c.nodes[0].locks.Close(context.Background()); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if got := c.holderOf("report:owner"); got != "" {
		t.Fatalf("lease still held by %q after Close", got)
	}
	if lines := c.nodes[0].logs.Lines("leasehold: job lease handed back", "key=report"); len(lines) != 1 {
		t.Fatalf("handed-back lines: %q", lines)
	}
	// The very next tick, anywhere, takes the lease: no ttl to wait.
	res := c.tick(2, 1, 0)
	if res[c.nodes[2]] != nil || c.nodes[2].runs.Load() != 1 {
		t.Fatalf("node2: Run = %v, runs %d; want it to take over at once", res[c.nodes[2]], c.nodes[2].runs.Load())
	}
	if r, _ := skipReason(res[c.nodes[1]]); r != core.SkipOtherInstance {
		t.Fatalf("node1: Run = %v, want SkipOtherInstance", res[c.nodes[1]])
	}
	if r, _ := skipReason(res[c.nodes[0]]); r != core.SkipShuttingDown {
		t.Fatalf("closed node0: Run = %v, want SkipShuttingDown", res[c.nodes[0]])
	}
	if c.totalRuns() != 6 {
		t.Fatalf("%d runs, want 6", c.totalRuns())
	}
}

// closeWithin closes l and fails the test if Close does not return within
// 10s of real time: on a ManualClock nobody advances, a Close that waits on
// the clock never returns.
func closeWithin(t *testing.T, l *core.Locks, ctx context.Context) {
	t.Helper()
	closed := make(chan error, 1)
	go func() { closed <- l.Close(ctx) }()
	if err := recvWithin(t, "Close on a clock nobody advances", closed); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

func TestCloseRightAfterARunDoesNotWaitAndTheStoreKeepsTheLeaseForTheRestOfTheSecond(t *testing.T) {
	for _, tc := range []struct {
		name string
		ctx  func() context.Context
	}{
		{"background", context.Background},
		{"done context", func() context.Context {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			return ctx
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newJobCluster(t, 2)
			c.addJob(nil, core.WithJobKey("report"), core.OnOneInstance(), core.WithJobTTL(jobTTL))
			a, b := c.nodes[0], c.nodes[1]
			if err := a.job.Run(context.Background()); err != nil {
				t.Fatalf("Run: %v", err)
			}
			c.advance(200 * time.Millisecond)

			closeWithin(t, a.locks, tc.ctx())
			if got := a.logs.Lines("leasehold: job lease handed back", "key=report", "expires_in=800ms"); len(got) != 1 {
				t.Fatalf("handed-back lines: %q", a.logs.Lines("handed back"))
			}
			if got, want := c.expiry("report:owner"), c.storeClock.Now().Add(800*time.Millisecond); !got.Equal(want) {
				t.Fatalf("lease expires at %v, want the end of the run's first second, %v", got, want)
			}

			// node1 fires the same tick a little later: it must skip it.
			c.advance(799 * time.Millisecond)
			if r, _ := skipReason(b.job.Run(context.Background())); r != core.SkipOtherInstance {
				t.Fatal("node1 ran the tick that node0 ran 999ms before")
			}
			c.advance(time.Millisecond)
			if err := b.job.Run(context.Background()); err != nil || b.runs.Load() != 1 {
				t.Fatalf("node1 a second after node0's run: Run = %v, runs %d; want it to take over", err, b.runs.Load())
			}
		})
	}
}

func TestCloseRightAfterARunLetsARenewalInFlightLandFirst(t *testing.T) {
	c := newJobCluster(t, 0)
	spy := newSpy(c.store, c.storeClock)
	var renewals atomic.Int32
	inFlight, second, unblock := make(chan struct{}), make(chan struct{}), make(chan struct{})
	spy.beforeRenew = func(ctx context.Context, key string) {
		switch renewals.Add(1) {
		case 1: // the keeper's renewal, held in flight
			close(inFlight)
			<-unblock
		case 2: // Close's
			close(second)
		}
	}
	c.nodes = append(c.nodes, c.newNode("node0", spy))
	var lease atomic.Pointer[core.Lock]
	c.addJob(func(*jobNode) func(ctx context.Context) error {
		return func(ctx context.Context) error { lease.Store(core.LockFromContext(ctx)); return nil }
	}, core.WithJobKey("report"), core.OnOneInstance(), core.WithJobTTL(jobTTL))
	nd := c.nodes[0]
	if err := nd.job.Run(context.Background()); err != nil { // takes the lease, renewed at 3s
		t.Fatalf("Run: %v", err)
	}
	c.advance(2500 * time.Millisecond)
	if err := nd.job.Run(context.Background()); err != nil {
		t.Fatalf("Run: %v", err)
	}
	c.storeClock.Advance(500 * time.Millisecond)
	advanced := make(chan struct{})
	go func() { nd.clock.Advance(500 * time.Millisecond); close(advanced) }()
	recvWithin(t, "the renewal due at 3s", inFlight)

	closed := make(chan error, 1)
	go func() { closed <- nd.locks.Close(context.Background()) }()
	pollUntil(t, "Close to end the lease", func() bool { return lease.Load().Context().Err() != nil })
	select {
	case <-second:
		t.Fatal("Close renewed the lease while the keeper's renewal was still in flight")
	case <-time.After(100 * time.Millisecond): // a grace for a wrong Close to show itself
	}
	close(unblock)
	recvWithin(t, "the renewal", advanced)
	if err := recvWithin(t, "Close", closed); err != nil {
		t.Fatalf("Close: %v", err)
	}
	// The run started at 2.5s: the store keeps the lease until 3.5s, not
	// for the 9s ttl of the late renewal.
	if got, want := c.expiry("report:owner"), c.storeClock.Now().Add(500*time.Millisecond); !got.Equal(want) {
		t.Fatalf("lease expires at %v, want %v", got, want)
	}
}

// ---------------------------------------------------------------------------
// Without overlapping

func TestWithoutOverlappingLongRunBlocksEveryoneUntilItEnds(t *testing.T) {
	c := newJobCluster(t, 3)
	started := make(chan context.Context, 1)
	release := make(chan struct{})
	var long atomic.Bool
	long.Store(true)
	c.addJob(func(nd *jobNode) func(ctx context.Context) error {
		return func(ctx context.Context) error {
			if long.Load() {
				started <- ctx
				<-release
			}
			return nil
		}
	}, core.WithJobKey("reindex"), core.WithoutOverlapping(), core.WithJobTTL(jobTTL))

	a := c.nodes[0]
	done := runAsync(a.job, context.Background())
	runCtx := recvWithin(t, "the long run to start", started)
	long.Store(false)
	lk := core.LockFromContext(runCtx)
	if lk == nil || lk.Key() != "reindex" {
		t.Fatalf("LockFromContext = %v, want the run lock", lk)
	}

	// Ten minutes of ticks: the run lock is renewed all along, and every
	// tick, on this instance and the others, is skipped.
	for tick := range 600 {
		for nd, err := range c.tick() {
			if r, _ := skipReason(err); r != core.SkipRunInProgress {
				t.Fatalf("tick %d: %s: Run = %v, want SkipRunInProgress", tick, nd.name, err)
			}
		}
		c.advance(tickGap)
	}
	if err := runCtx.Err(); err != nil {
		t.Fatalf("the long run was cancelled: %v", context.Cause(runCtx))
	}
	if !lk.Held() || c.holderOf("reindex") != "node0" {
		t.Fatalf("run lock not held after ten minutes (Held %v, store holder %q)", lk.Held(), c.holderOf("reindex"))
	}
	if got := c.totalRuns(); got != 1 {
		t.Fatalf("%d runs, want 1", got)
	}
	for _, nd := range c.nodes {
		if n := len(nd.logs.Lines(`msg="leasehold: job tick skipped"`, `reason="a run is still in progress"`)); n != 600 {
			t.Fatalf("%s logged %d in-progress skips, want 600", nd.name, n)
		}
	}
	notYet(t, "the long run's Run", done)

	close(release)
	if err := recvWithin(t, "the long run's Run", done); err != nil {
		t.Fatalf("long Run = %v", err)
	}
	if got := c.holderOf("reindex"); got != "" {
		t.Fatalf("run lock held by %q after the run", got)
	}
	// The next tick runs, on the first instance that fires.
	res := c.tick(1, 2, 0)
	if res[c.nodes[1]] != nil || c.nodes[1].runs.Load() != 1 {
		t.Fatalf("node1 after the long run: Run = %v", res[c.nodes[1]])
	}
	// Without OnOneInstance every instance may run a tick once the previous
	// run is over; the short runs do not overlap, so all three ran.
	if got := c.totalRuns(); got != 4 {
		t.Fatalf("%d runs, want 4", got)
	}
}

func TestWithoutOverlappingCrashedRunLockExpiresAfterTTL(t *testing.T) {
	c := newJobCluster(t, 2)
	c.addJob(nil, core.WithJobKey("reindex"), core.WithoutOverlapping(), core.WithJobTTL(jobTTL))
	// A run crashed on an instance that is gone: its run lock stays in the
	// store, with nobody renewing it.
	if _, ok, err := c.store.Acquire(context.Background(), "reindex", "crashed/instance", jobTTL); err != nil || !ok {
		t.Fatalf("store.Acquire = %v, %v", ok, err)
	}
	for tick := range 9 {
		for nd, err := range c.tick() {
			if r, _ := skipReason(err); r != core.SkipRunInProgress {
				t.Fatalf("tick %d (+%ds): %s: Run = %v, want SkipRunInProgress", tick, tick, nd.name, err)
			}
		}
		c.advance(tickGap)
	}
	// ttl after the crash, the lock has expired: the tick runs.
	if res := c.tick(); res[c.nodes[0]] != nil {
		t.Fatalf("tick at +ttl: Run = %v", res[c.nodes[0]])
	}
	if c.totalRuns() != 2 {
		t.Fatalf("%d runs at +ttl, want 2 (both instances, one after the other)", c.totalRuns())
	}
}

func TestWithoutOverlappingRunLockOutlivesACancelledRun(t *testing.T) {
	// The caller's context ends during a run whose body takes a while to
	// stop: the run lock stays until the body returns, so no other run
	// starts alongside it.
	c := newJobCluster(t, 2)
	started := make(chan context.Context, 1)
	finish := make(chan struct{})
	c.addJob(func(nd *jobNode) func(ctx context.Context) error {
		return func(ctx context.Context) error {
			if nd.name == "node0" {
				started <- ctx
				<-finish
			}
			return ctx.Err()
		}
	}, core.WithJobKey("reindex"), core.WithoutOverlapping(), core.WithJobTTL(jobTTL))

	ctx, cancel := context.WithCancel(context.Background())
	done := runAsync(c.nodes[0].job, ctx)
	runCtx := recvWithin(t, "the run to start", started)
	cancel()
	<-runCtx.Done()
	if !errors.Is(context.Cause(runCtx), context.Canceled) {
		t.Fatalf("run context cause = %v, want context.Canceled", context.Cause(runCtx))
	}
	// Half a minute of winding down: the run lock is still renewed, and
	// node1's ticks are skipped.
	for tick := range 30 {
		if r, _ := skipReason(c.nodes[1].job.Run(context.Background())); r != core.SkipRunInProgress {
			t.Fatalf("tick %d: node1 ran alongside a run that had not returned", tick)
		}
		c.advance(tickGap)
	}
	if got := c.holderOf("reindex"); got != "node0" {
		t.Fatalf("run lock held by %q while the cancelled run winds down, want node0", got)
	}
	close(finish)
	if err := recvWithin(t, "Run", done); !errors.Is(err, context.Canceled) {
		t.Fatalf("Run = %v, want the body's context.Canceled", err)
	}
	if err := c.nodes[1].job.Run(context.Background()); err != nil {
		t.Fatalf("node1 after the run returned: %v", err)
	}
}

// ---------------------------------------------------------------------------
// Fencing inside a run

func TestLockFromContextInsideRuns(t *testing.T) {
	type seen struct {
		key   string
		token int64
		held  bool
	}
	record := func(out *[]seen) func(nd *jobNode) func(ctx context.Context) error {
		return func(nd *jobNode) func(ctx context.Context) error {
			return func(ctx context.Context) error {
				lk := core.LockFromContext(ctx)
				if lk == nil {
					*out = append(*out, seen{})
					return nil
				}
				*out = append(*out, seen{lk.Key(), lk.Token(), lk.Held()})
				return nil
			}
		}
	}

	// fiveRuns runs five ticks of a job "sync" on one of two instances and
	// returns what each run saw.
	fiveRuns := func(t *testing.T, opts ...core.JobOption) []seen {
		c := newJobCluster(t, 2)
		var got []seen
		c.addJob(record(&got), append(opts, core.WithJobKey("sync"), core.WithJobTTL(jobTTL))...)
		for range 5 {
			c.tick(0)
			c.advance(tickGap)
		}
		if len(got) != 5 {
			t.Fatalf("%d runs, want 5", len(got))
		}
		return got
	}

	t.Run("WithoutOverlapping: the run lock, a new token every run", func(t *testing.T) {
		for _, opts := range [][]core.JobOption{
			{core.WithoutOverlapping()},
			{core.WithoutOverlapping(), core.OnOneInstance()},
		} {
			got := fiveRuns(t, opts...)
			for i, s := range got {
				if s.key != "sync" || !s.held {
					t.Fatalf("run %d: lock %+v, want the held run lock \"sync\"", i, s)
				}
				if i > 0 && s.token <= got[i-1].token {
					t.Fatalf("run %d: token %d, not above run %d's %d", i, s.token, i-1, got[i-1].token)
				}
			}
		}
	})

	t.Run("OnOneInstance only: the lease", func(t *testing.T) {
		got := fiveRuns(t, core.OnOneInstance())
		for i, s := range got {
			if s.key != "sync:owner" || !s.held || s.token != got[0].token || s.token <= 0 {
				t.Fatalf("run %d: lock %+v, want the lease \"sync:owner\" with one token", i, s)
			}
		}
	})

	t.Run("outside a run: nil", func(t *testing.T) {
		if lk := core.LockFromContext(context.Background()); lk != nil {
			t.Fatalf("LockFromContext outside a run = %v", lk)
		}
	})
}

// ---------------------------------------------------------------------------
// Registration

func namedJob(ctx context.Context) error { return nil }

type jobHolder struct{}

func (jobHolder) Cleanup(ctx context.Context) error { return nil }

func TestJobRegistration(t *testing.T) {
	newL := func(t *testing.T) *core.Locks {
		return newJobCluster(t, 1).nodes[0].locks
	}
	noop := func(ctx context.Context) error { return nil }

	t.Run("two jobs with one key", func(t *testing.T) {
		l := newL(t)
		if _, err := l.Job(noop, core.WithJobKey("x"), core.OnOneInstance()); err != nil {
			t.Fatal(err)
		}
		_, err := l.Job(noop, core.WithJobKey("x"), core.WithoutOverlapping())
		if !errors.Is(err, core.ErrDuplicateKey) {
			t.Fatalf("second job x: %v, want ErrDuplicateKey", err)
		}
		if msg := err.Error(); strings.Count(msg, `job "x"`) != 2 {
			t.Fatalf("error does not name both jobs: %s", msg)
		}
	})

	t.Run("a job key that is another job's lease", func(t *testing.T) {
		l := newL(t)
		if _, err := l.Job(noop, core.WithJobKey("x"), core.OnOneInstance()); err != nil {
			t.Fatal(err)
		}
		_, err := l.Job(noop, core.WithJobKey("x:owner"), core.WithoutOverlapping())
		if !errors.Is(err, core.ErrDuplicateKey) {
			t.Fatalf("job x:owner: %v, want ErrDuplicateKey", err)
		}
		for _, want := range []string{`job "x:owner"`, `job "x"`, `"x:owner"`, "lease", "run lock"} {
			if !strings.Contains(err.Error(), want) {
				t.Fatalf("error %q does not say %s", err, want)
			}
		}
		// The other way round too.
		l2 := newL(t)
		if _, err := l2.Job(noop, core.WithJobKey("x:owner"), core.WithoutOverlapping()); err != nil {
			t.Fatal(err)
		}
		if _, err := l2.Job(noop, core.WithJobKey("x"), core.OnOneInstance()); !errors.Is(err, core.ErrDuplicateKey) {
			t.Fatalf("job x after job x:owner: %v, want ErrDuplicateKey", err)
		}
	})

	t.Run("an election key that is a job's", func(t *testing.T) {
		l := newL(t)
		if _, err := l.Job(noop, core.WithJobKey("x"), core.OnOneInstance()); err != nil {
			t.Fatal(err)
		}
		for _, key := range []string{"x", "x:owner"} {
			_, err := l.Elect(key, core.Campaign{OnAcquired: func(*core.Lock) error { return nil }})
			if !errors.Is(err, core.ErrDuplicateKey) {
				t.Fatalf("election %q: %v, want ErrDuplicateKey", key, err)
			}
			if !strings.Contains(err.Error(), fmt.Sprintf("election %q", key)) || !strings.Contains(err.Error(), `job "x"`) {
				t.Fatalf("error does not name both: %v", err)
			}
		}
		// And a job whose key is an election's.
		if _, err := l.Elect("leader", core.Campaign{OnAcquired: func(*core.Lock) error { return nil }}); err != nil {
			t.Fatal(err)
		}
		_, err := l.Job(noop, core.WithJobKey("leader"), core.WithoutOverlapping())
		if !errors.Is(err, core.ErrDuplicateKey) || !strings.Contains(err.Error(), `election "leader"`) {
			t.Fatalf("job leader: %v, want ErrDuplicateKey naming the election", err)
		}
		// A refused registration reserves nothing.
		if _, err := l.Job(noop, core.WithJobKey("other"), core.WithoutOverlapping()); err != nil {
			t.Fatalf("job other: %v", err)
		}
	})

	t.Run("duplicates are per instance", func(t *testing.T) {
		c := newJobCluster(t, 2)
		for _, nd := range c.nodes {
			if _, err := nd.locks.Job(noop, core.WithJobKey("x"), core.OnOneInstance()); err != nil {
				t.Fatalf("%s: %v", nd.name, err)
			}
		}
	})

	t.Run("closures need WithJobKey", func(t *testing.T) {
		l := newL(t)
		var nested func(ctx context.Context) error
		func() { nested = func(ctx context.Context) error { return nil } }()
		for name, fn := range map[string]func(ctx context.Context) error{"closure": noop, "nested closure": nested} {
			_, err := l.Job(fn, core.OnOneInstance())
			if !errors.Is(err, core.ErrInvalidArgument) || !strings.Contains(err.Error(), "WithJobKey") {
				t.Fatalf("%s without WithJobKey: %v, want ErrInvalidArgument asking for WithJobKey", name, err)
			}
		}
		if _, err := l.Job(noop, core.WithJobKey("with-key"), core.OnOneInstance()); err != nil {
			t.Fatalf("closure with WithJobKey: %v", err)
		}
	})

	t.Run("named functions default to their name", func(t *testing.T) {
		l := newL(t)
		j, err := l.Job(namedJob, core.OnOneInstance())
		if err != nil {
			t.Fatal(err)
		}
		if want := "github.com/leasehold/leasehold/core_test.namedJob"; j.Key() != want {
			t.Fatalf("Key = %q, want %q", j.Key(), want)
		}
		j, err = l.Job(jobHolder{}.Cleanup, core.OnOneInstance())
		if err != nil {
			t.Fatal(err)
		}
		if want := "github.com/leasehold/leasehold/core_test.jobHolder.Cleanup"; j.Key() != want {
			t.Fatalf("method value Key = %q, want %q", j.Key(), want)
		}
	})

	t.Run("bad jobs", func(t *testing.T) {
		l := newL(t)
		if _, err := l.Job(noop, core.WithJobKey("g")); !errors.Is(err, core.ErrInvalidArgument) {
			t.Fatalf("no guard: %v, want ErrInvalidArgument", err)
		}
		if _, err := l.Job(nil, core.WithJobKey("n"), core.OnOneInstance()); !errors.Is(err, core.ErrInvalidArgument) {
			t.Fatalf("nil fn: %v, want ErrInvalidArgument", err)
		}
		if _, err := l.Job(noop, core.WithJobKey(strings.Repeat("k", core.MaxKeyLength-5)), core.OnOneInstance()); !errors.Is(err, core.ErrInvalidKey) {
			t.Fatalf("key whose lease key is too long: %v, want ErrInvalidKey", err)
		}
		if _, err := l.Job(noop, core.WithJobKey("t"), core.OnOneInstance(), core.WithJobTTL(time.Microsecond)); !errors.Is(err, core.ErrInvalidTTL) {
			t.Fatalf("bad ttl: %v, want ErrInvalidTTL", err)
		}
		// None of them reserved its key.
		for _, k := range []string{"g", "n", "t"} {
			if _, err := l.Job(noop, core.WithJobKey(k), core.OnOneInstance()); err != nil {
				t.Fatalf("job %q after its refusal: %v", k, err)
			}
		}
	})

	t.Run("after Close", func(t *testing.T) {
		l := newL(t)
		if err := l.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		if _, err := l.Job(noop, core.WithJobKey("late"), core.OnOneInstance()); !errors.Is(err, core.ErrClosed) {
			t.Fatalf("Job after Close: %v, want ErrClosed", err)
		}
	})
}

// ---------------------------------------------------------------------------
// Func and panics

func TestFuncSwallowsSkipsLogsFailuresAndRecoversPanics(t *testing.T) {
	c := newJobCluster(t, 2)
	var mode atomic.Value // "ok", "fail", "panic"
	mode.Store("ok")
	c.addJob(func(nd *jobNode) func(ctx context.Context) error {
		return func(ctx context.Context) error {
			switch mode.Load() {
			case "fail":
				return errors.New("disk full")
			case "panic":
				panic("nil map")
			}
			return nil
		}
	}, core.WithJobKey("report"), core.OnOneInstance(), core.WithoutOverlapping(), core.WithJobTTL(jobTTL))
	a, b := c.nodes[0], c.nodes[1]
	fa, fb := a.job.Func(), b.job.Func()

	fa()
	fb() // skipped: node0 owns the job
	if a.runs.Load() != 1 || b.runs.Load() != 0 {
		t.Fatalf("runs: node0 %d, node1 %d", a.runs.Load(), b.runs.Load())
	}
	if n := len(b.logs.Lines("level=ERROR")); n != 0 {
		t.Fatalf("a skip was logged as an error: %s", b.logs.String())
	}
	if n := len(b.logs.Lines("level=DEBUG", "leasehold: job tick skipped")); n != 1 {
		t.Fatalf("node1 logged %d skips, want 1", n)
	}

	mode.Store("fail")
	fa()
	if lines := a.logs.Lines("level=ERROR", `msg="leasehold: job failed"`, "key=report", `err="disk full"`); len(lines) != 1 {
		t.Fatalf("failure not logged once: %s", a.logs.String())
	}

	mode.Store("panic")
	fa() // must not panic
	if lines := a.logs.Lines("level=ERROR", `msg="leasehold: job panicked"`, "key=report", `panic="nil map"`); len(lines) != 1 {
		t.Fatalf("panic not logged once: %s", a.logs.String())
	}
	// The panicking run's lock was released: the next run is not blocked.
	if got := c.holderOf("report"); got != "" {
		t.Fatalf("run lock held by %q after the panic", got)
	}
	mode.Store("ok")
	if err := a.job.Run(context.Background()); err != nil {
		t.Fatalf("Run after the panic: %v", err)
	}
}

func TestRunPropagatesAPanicAfterReleasingTheRunLock(t *testing.T) {
	for _, opts := range [][]core.JobOption{
		{core.WithoutOverlapping()},
		{core.OnOneInstance()},
		{core.OnOneInstance(), core.WithoutOverlapping()},
	} {
		c := newJobCluster(t, 1)
		c.addJob(func(nd *jobNode) func(ctx context.Context) error {
			return func(ctx context.Context) error { panic("boom") }
		}, append(opts, core.WithJobKey("p"), core.WithJobTTL(jobTTL))...)
		nd := c.nodes[0]
		func() {
			defer func() {
				if r := recover(); r != "boom" {
					t.Fatalf("recovered %v, want the job's panic", r)
				}
				if got := c.holderOf("p"); got != "" {
					t.Fatalf("run lock held by %q while the panic goes on", got)
				}
			}()
			_ = nd.job.Run(context.Background())
			t.Fatal("Run returned")
		}()
		// The run was counted out: Close does not wait for it.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		nd.clock.Advance(time.Second)
		if err := nd.locks.Close(ctx); err != nil || ctx.Err() != nil {
			t.Fatalf("Close after a panicked run: %v (ctx %v)", err, ctx.Err())
		}
	}
}
