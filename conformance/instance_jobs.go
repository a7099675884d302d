package conformance

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leasehold/leasehold/core"
	"github.com/leasehold/leasehold/core/coretest"
)

// jobsOneInstance ticks a job on three instances, in a different order each
// tick, for longer than a ttl: the instance that took the lease at the first
// tick keeps it, renewed, and is the only one to run.
func jobsOneInstance(t testing.TB, e *env) {
	c := newCluster(t, e, 3)
	c.addJob(e.key(), nil, core.OnOneInstance())
	gap := c.ttl / 4
	// The order in which instances fire changes from tick to tick, as it
	// would with unsynchronised clocks; the owner must not.
	orders := [][]int{{0, 1, 2}, {2, 1, 0}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {0, 2, 1}}
	var owner *node
	first := c.now()
	for i, order := range orders {
		if i > 0 {
			c.elapse(gap)
		}
		when := fmt.Sprintf("tick %d of %d, %v after the first", i+1, len(orders), c.now()-first)
		res := c.tick(order...)
		won := ran(res)
		if len(won) != 1 || owner != nil && won[0] != owner {
			c.lateLosses(t) // the owner's renewals may not have come back in time
		}
		if len(won) != 1 {
			t.Fatalf("%s: %d instances ran the job (%s); with OnOneInstance exactly one must run each tick: the store must give the job's lease to one instance and refuse it to the others while the owner renews it", when, len(won), describeTick(res))
		}
		if owner == nil {
			owner = won[0]
		} else if won[0] != owner {
			t.Fatalf("%s: %s ran the job (%s), but %s took its lease at the first tick and is alive and renewing it every ttl/3; the lease must stay with its owner while the store confirms its renewals (a Renew that reports success must move the expiry to ttl from now)", when, won[0].name, describeTick(res), owner.name)
		}
		for _, r := range res {
			switch {
			case r.nd == owner && r.err != nil:
				t.Fatalf("%s: the owner %s ran and its Run returned %v (%s); a run under a lease the store keeps must succeed", when, r.nd.name, r.err, describeTick(res))
			case r.nd != owner && !skippedFor(r.err, core.SkipOtherInstance):
				t.Fatalf("%s: %s; every instance but the owner %s must skip the tick because %s: %s", when, describeTick(res), owner.name, core.SkipOtherInstance, why(core.SkipOtherInstance))
			}
		}
	}
}

// jobsNoOverlap holds a long run on one instance, blocked on a channel,
// while every instance ticks for longer than a ttl (1.25 × TTL): all skip, since the run
// lock is renewed; once the run ends, the next tick runs.
func jobsNoOverlap(t testing.TB, e *env) {
	c := newCluster(t, e, 3)
	started := make(chan context.Context, 1)
	finish := make(chan struct{})
	t.Cleanup(func() { closeOnce(finish) })
	var long atomic.Bool
	long.Store(true)
	c.addJob(e.key(), func(nd *node, ctx context.Context) error {
		if long.CompareAndSwap(true, false) {
			started <- ctx
			select {
			case <-finish:
			case <-ctx.Done():
			}
		}
		return nil
	}, core.WithoutOverlapping())

	done := runAsync(c.nodes[0])
	runCtx := await(t, e, started, "the long run on i0 reaching the job's function")
	gap := c.ttl / 4
	const ticks = 5
	began := c.now()
	for i := range ticks {
		c.elapse(gap)
		when := fmt.Sprintf("tick %d of %d, %v into i0's long run", i+1, ticks, c.now()-began)
		if err := runCtx.Err(); err != nil {
			c.lateLosses(t)
			t.Fatalf("%s: the long run's context ended (cause: %v) while i0 was alive and renewing its run lock every ttl/3; the store must keep confirming the renewals of the lock's holder", when, context.Cause(runCtx))
		}
		allSkipped(t, c.tick(), core.SkipRunInProgress, when)
	}
	closeOnce(finish)
	if err := await(t, e, done, "the end of i0's long run"); err != nil {
		t.Fatalf("i0's long run returned %v once its function returned; a run whose run lock the store kept renewed, then released, must return nil", err)
	}
	res := c.tick(1, 2, 0)
	if len(res) == 0 || !res[0].ran || res[0].err != nil {
		t.Fatalf("the first tick after the long run ended: %s; i1 must run it: the run lock was released when the run returned, so the store must let the next instance take it", describeTick(res))
	}
}

func closeOnce(ch chan struct{}) {
	select {
	case <-ch:
	default:
		close(ch)
	}
}

// jobsHandoverOnClose closes the owner of a job cleanly: Close hands the
// lease back, and the next tick elsewhere takes it at once, with a greater
// token.
func jobsHandoverOnClose(t testing.TB, e *env) {
	c := newCluster(t, e, 3)
	c.addJob(e.key(), nil, core.OnOneInstance())
	owner := c.nodes[0]
	gap := c.ttl / 4
	var ranBy time.Time
	for i := range 2 {
		if i > 0 {
			c.elapse(gap)
		}
		res := c.tick(0, 1, 2)
		ranBy = owner.clock.Now()
		if won := ran(res); len(won) != 1 || won[0] != owner || res[0].err != nil {
			t.Fatalf("tick %d before the Close: %s; i0, which fired first, must take the job's lease and run, and the others skip", i+1, describeTick(res))
		}
	}
	old := owner.lastRun()
	// Close keeps a lease whose run started less than a second ago (on the
	// closing instance's clock) for the rest of that second, so that
	// instances firing the same tick a little later skip it: let the
	// second pass first, on the owner's own clock.
	c.elapseOn(owner, ranBy, core.MinHold+c.step)
	if err := c.closeNode(owner); err != nil {
		t.Fatalf("Close of the job's owner i0 returned %v; a clean shutdown hands the lease back with Release, which must succeed for the lease's live holder", err)
	}
	res := c.tick(2, 1)
	if len(res) != 2 || !res[0].ran || res[0].err != nil || res[1].ran || !skippedFor(res[1].err, core.SkipOtherInstance) {
		t.Fatalf("the first tick after i0's Close: %s; i2, firing first, must take the lease at once and run, and i1 skip: Close handed the lease back, so the store must have freed the key then, not a ttl later", describeTick(res))
	}
	if lk := c.nodes[2].lastRun(); lk == nil || lk.Token() <= old.Token() {
		t.Fatalf("the new owner i2 runs under lease token %v, not greater than the token %d of the lease i0 handed back; the store must give every acquisition of a key a greater token, across releases", tokenOf(lk), old.Token())
	}
}

// describeLost renders EventLockLost events for failure messages.
func describeLost(evs []core.Event) string {
	var parts []string
	for _, ev := range evs {
		parts = append(parts, fmt.Sprintf("%s, token %d: %v", show(ev.Key), ev.Token, ev.Err))
	}
	return strings.Join(parts, "; ")
}

func tokenOf(lk *core.Lock) any {
	if lk == nil {
		return "none"
	}
	return lk.Token()
}

// lateWrite is what the paused owner's run did once its context ended: the
// write it attempted with its old token, and the context's cause.
type lateWrite struct {
	token int64
	cause error
	err   error
}

// pauseOutcome is what pausedOwner saw.
type pauseOutcome struct {
	c             *cluster
	paused, taker *node
	old, new      *core.Lock // the locks the paused owner's run and the taker's run ran under
	late          lateWrite
	runErr        error // the paused owner's Run
	resource      *coretest.FencedResource
	pausedAt      time.Duration // the cluster's time at the pause
}

// pausedOwner is the scenario of jobs-takeover-after-pause and jobs-fencing:
// i0 runs the job and, mid-run, pauses (its clock stops) after its lease has
// been renewed at least once. i1 and i2 tick until one of them takes over,
// which must happen once the paused owner's locks expire on the store's
// clock, ttl after their last renewal. Then i0 resumes: its next renewal
// must be refused, which cancels its run's context with a
// *core.LockLostError, and its run then tries a late write with its old
// token on a fenced resource. The caller checks the outcome.
func pausedOwner(t testing.TB, e *env, opts ...core.JobOption) *pauseOutcome {
	c := newCluster(t, e, 3)
	o := &pauseOutcome{c: c, paused: c.nodes[0], resource: &coretest.FencedResource{}}
	started := make(chan context.Context, 1)
	late := make(chan lateWrite, 1)
	stop := make(chan struct{})
	t.Cleanup(func() { closeOnce(stop) })
	var first atomic.Bool
	first.Store(true)
	c.addJob(e.key(), func(nd *node, ctx context.Context) error {
		token := core.LockFromContext(ctx).Token()
		if err := o.resource.Write(token, nd.name); err != nil {
			return err
		}
		if nd != o.paused || !first.CompareAndSwap(true, false) {
			return nil
		}
		// i0's first run goes on; the process pauses during it.
		started <- ctx
		select {
		case <-ctx.Done():
		case <-stop:
			return nil
		}
		cause := context.Cause(ctx)
		late <- lateWrite{token: token, cause: cause, err: o.resource.Write(token, nd.name+" (late)")}
		return cause
	}, opts...)

	done := runAsync(o.paused)
	runCtx := await(t, e, started, "i0's run reaching the job's function")
	o.old = o.paused.lastRun()

	// While i0 is alive, its locks are renewed every ttl/3 and the others
	// skip.
	for i := range 2 {
		c.elapse(c.ttl / 4)
		allSkipped(t, c.tick(1, 2), core.SkipOtherInstance, fmt.Sprintf("a tick %v into i0's run, while i0 is alive", time.Duration(i+1)*c.ttl/4))
	}

	o.paused.pause()
	o.pausedAt = c.now()
	if lost := o.paused.lostLocks(); len(lost) != 0 {
		lostLate(t, lost, c.ttl)
		t.Fatalf("i0 lost a lock while it was alive, before it paused (%s); the store must confirm every renewal of a live lock by its holder", describeLost(lost))
	}
	allSkipped(t, c.tick(1, 2), core.SkipOtherInstance, "the tick right after i0 paused, with its lease renewed less than ttl/3 before")

	// i0's locks were last renewed no later than the pause, on the store's
	// clock, so a tick sent ttl (and a margin) after it must take over.
	gap := c.ttl / 12
	limit := goneCheck(c.ttl)
	for {
		c.elapse(gap)
		sent := c.now()
		res := c.tick(2, 1)
		if won := ran(res); len(won) > 0 {
			for _, r := range res {
				if r.ran && (len(won) != 1 || r.err != nil) || !r.ran && !skippedFor(r.err, core.SkipOtherInstance) {
					t.Fatalf("the tick that took the job over from the paused i0, %v after it paused: %s; exactly one instance must take it over and run, and the other skip", sent-o.pausedAt, describeTick(res))
				}
			}
			o.taker = won[0]
			break
		}
		for _, r := range res {
			// With WithoutOverlapping, the lease may expire a moment before
			// the run lock: its taker then skips until the run lock expires.
			if !skippedFor(r.err, core.SkipOtherInstance) && !skippedFor(r.err, core.SkipRunInProgress) {
				t.Fatalf("a tick %v after i0 paused: %s; until i0's locks expire the others must skip, and then one must take the job over", sent-o.pausedAt, describeTick(res))
			}
		}
		if sent-o.pausedAt >= limit {
			t.Fatalf("a tick sent %v after i0 paused was still skipped (%s): the paused owner's lease, last renewed before it paused, was still held more than its ttl of %v later; the store must expire a lock on its own clock ttl after its last Acquire or Renew, however long its holder is away", sent-o.pausedAt, describeTick(res), c.ttl)
		}
	}
	o.new = o.taker.lastRun()

	// The paused process has noticed nothing: its clock has not moved.
	if err := runCtx.Err(); err != nil {
		t.Fatalf("i0's run context ended (cause: %v) before i0 resumed; i0 must keep its locks while it is alive and the store confirms its renewals, and a paused instance, whose clock does not move, cannot notice anything", context.Cause(runCtx))
	}

	// i0 resumes: its clock catches up, and its next renewal must be refused.
	// The loss is reported before resume returns; the run's context ends
	// just after, from another goroutine.
	if lost := o.paused.lostLocks(); len(lost) != 0 {
		lostLate(t, lost, c.ttl)
		t.Fatalf("i0 lost a lock while it was paused (%s); a paused instance, whose clock does not move, cannot notice anything", describeLost(lost))
	}
	o.paused.resume()
	if len(o.paused.lostLocks()) == 0 {
		t.Fatalf("i0 resumed and its clock moved past its next renewal, but it lost none of its locks: the store accepted the renewal of its lease (and run lock) on %s, which had expired and which %s has taken over since; it must refuse it (expired means gone, and only the current holder may renew)", show(o.old.Key()), o.taker.name)
	}
	o.late = await(t, e, late, "the end of i0's run context after its refused renewal")
	o.runErr = await(t, e, done, "i0's Run returning")
	return o
}

// jobsTakeoverAfterPause checks the takeover and the paused owner's loss.
func jobsTakeoverAfterPause(t testing.TB, e *env) {
	o := pausedOwner(t, e, core.OnOneInstance())
	var lost *core.LockLostError
	if !errors.As(o.late.cause, &lost) || lost.Reason != core.LostRefused {
		t.Fatalf("the resumed i0's run context ended with cause %v; it must end with a *core.LockLostError whose Reason is LostRefused: the store refused the renewal of the expired lease", o.late.cause)
	}
	if !errors.As(o.runErr, &lost) {
		t.Fatalf("the resumed i0's Run returned %v; it must return the *core.LockLostError of its lease: the run may not have been alone", o.runErr)
	}
	// i0 ticks again: the new owner, alive, keeps the job.
	res := o.c.tick(0, 1, 2)
	if won := ran(res); len(won) != 1 || won[0] != o.taker || !skippedFor(res[0].err, core.SkipOtherInstance) {
		t.Fatalf("the first tick after i0 resumed: %s; only the new owner %s may run, and i0 must skip: the store gave %s the lease", describeTick(res), o.taker.name, o.taker.name)
	}
}

// jobsFencing checks the tokens of the paused owner and of its successor,
// with WithoutOverlapping too, so that the run lock fences.
func jobsFencing(t testing.TB, e *env) {
	o := pausedOwner(t, e, core.OnOneInstance(), core.WithoutOverlapping())
	if o.old.Token() <= 0 || o.new.Token() <= o.old.Token() {
		t.Fatalf("the paused i0 ran under token %d on %s, and %s took over with token %d; the store must give a takeover a token greater than the expired lock's, or a fenced resource cannot tell the new holder's writes from the old one's", o.old.Token(), show(o.old.Key()), o.taker.name, o.new.Token())
	}
	if !errors.Is(o.late.err, coretest.ErrStaleToken) {
		highest, value := o.resource.Read()
		t.Fatalf("the resumed i0's late write with its old token %d returned %v (the resource now holds %q, highest token %d); a resource that keeps the highest token must refuse it, which takes a greater token for the new holder", o.late.token, o.late.err, value, highest)
	}
	if highest, value := o.resource.Read(); highest != o.new.Token() || value != o.taker.name {
		t.Fatalf("the fenced resource holds %q with token %d; it must hold the new owner %s's write with token %d", value, highest, o.taker.name, o.new.Token())
	}
}
