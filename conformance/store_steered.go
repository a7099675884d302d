package conformance

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/leasehold/leasehold/conformance/lateness"
	"github.com/leasehold/leasehold/core"
)

// steeredCases reach the window between a store call's round trips on
// purpose instead of racing for it: each call runs on a steered context
// that stops it at its n-th look at the context, for n over every look the
// call makes (see steered), and while it is stopped the kit lets the lock
// expire and another owner take the key over, then lets the call go on. A
// store whose call is one atomic round trip decides it either wholly before
// the stop or wholly after it, and its answers agree with the takeover; a
// store that reads in one round trip and writes in the next writes over the
// new holder, whatever the speed of the server or of the machine.
//
// They sleep, but they are not marked Waits: a call stopped while its client
// holds a lock of its pool (database/sql looks at the context under the
// pool's mutex) stalls every call through that pool until it goes on, and
// would make the expiry cases running beside it late. So they run alone:
// under Run before the waiting cases start, under Declare once those have
// ended (see Case.alone).
func steeredCases() []Case {
	return []Case{
		{
			Name:    "steer-renew-takeover",
			Catches: "a Renew that reads the owner in one round trip and extends the lock in another (GET then PEXPIRE, SELECT then UPDATE by key), so that an old holder whose lock expires in between extends the lock of the owner that took the key over, and both believe they hold it.",
			Fix:     "Make Renew one conditional write that checks the owner and the expiry in the same statement or script (UPDATE … WHERE key = ? AND owner = ? AND the lock has not expired; in Redis, one script), never a read followed by a separate write.",
			alone:   true,
			run:     steerTakeover("renew"),
		},
		{
			Name:    "steer-release-takeover",
			Catches: "a Release that reads the owner in one round trip and deletes in another (GET then DEL, SELECT then DELETE by key), so that an old holder whose lock expires in between frees the lock of the owner that took the key over.",
			Fix:     "Make Release one conditional delete that checks the owner in the same statement or script (DELETE … WHERE key = ? AND owner = ?; in Redis, one script), never a read followed by a separate write.",
			alone:   true,
			run:     steerTakeover("release"),
		},
		{
			Name:    "steer-acquire-takeover",
			Catches: "an Acquire that takes the lock in one round trip and draws or stores its fencing token in another (SET NX then INCR), so that an Acquire stopped between them hands out a token greater than that of an owner that took the key after it.",
			Fix:     "Draw the token inside the statement or script that takes the lock, so that taking the lock and its token are one atomic step.",
			alone:   true,
			run:     steerTakeover("acquire"),
		},
		{
			Name:    "acquire-cut-short",
			Catches: "an Acquire that takes the lock in one round trip and sets its expiry in another (SETNX then PEXPIRE, an INSERT and a later UPDATE), so that a call cut short between them, by a cancelled context or a lost connection, leaves the key locked for ever.",
			Fix:     "Write the lock and its expiry in one statement or script (SET key owner NX PX ttl; one INSERT … ON CONFLICT with the expiry), so that no outcome of a cut-short call leaves a lock without an expiry.",
			alone:   true,
			run:     acquireCutShort,
		},
	}
}

// steerCalls runs call(i, ctx) for every i < len(pauses) in a goroutine of
// its own, each on a steered context that stops at its pauses[i]-th look,
// and returns once each call has either stopped there or returned, or has
// done neither for patience since the last call that did, and for ttl since
// they started: paused[i] says which calls stopped, blocked[i] which did
// neither. wait lets every call go on and waits for them to return; then
// res[i].took is how long call i ran, without the time it stood stopped.
//
// A call may wait, before its pause-th look, for a lock that another stopped
// call holds: database/sql looks at the context while it holds the pool's
// mutex, and a pool of one connection lends it to one call at a time. Such a
// call neither stops nor returns; patience, counted from the last call that
// stopped or returned, tells it from a slow one, and the caller runs its
// pause again in a later round. A call that has not stopped by ttl is of no
// use to the round anyway: its lock may have expired by then.
func (e *env) steerCalls(pauses []int, timeout, patience, ttl time.Duration, call func(i int, ctx context.Context) result) (ctxs []*steered, paused, blocked []bool, res []result, wait func()) {
	n := len(pauses)
	ctxs, paused, blocked, res = make([]*steered, n), make([]bool, n), make([]bool, n), make([]result, n)
	done := make([]chan struct{}, n)
	events := make(chan int, n)
	for i := range n {
		ctxs[i], done[i] = newSteered(timeout, pauses[i]), make(chan struct{})
		go func() {
			defer close(done[i])
			start := time.Now()
			res[i] = call(i, ctxs[i])
			// The time the call ran, not the time the kit held it.
			res[i].took = time.Since(start) - time.Duration(ctxs[i].stopped.Load())
		}()
		go func() {
			select {
			case <-ctxs[i].paused:
			case <-done[i]:
			}
			events <- i
		}()
	}
	seen := make([]bool, n)
	start := time.Now()
	giveUp := func() time.Duration { return max(patience, ttl-time.Since(start)) }
	give := time.NewTimer(giveUp())
	defer give.Stop()
wait:
	for left := n; left > 0; left-- {
		select {
		case i := <-events:
			seen[i] = true
			select {
			case <-ctxs[i].paused:
				paused[i] = true
			default:
			}
			give.Reset(giveUp())
		case <-give.C:
			break wait
		}
	}
	for i := range n {
		blocked[i] = !seen[i]
	}
	return ctxs, paused, blocked, res, func() {
		// Every call goes on before any is waited for: one may wait for a
		// lock that a later one, stopped, holds.
		for i := range n {
			ctxs[i].goOn()
		}
		for i := range n {
			<-done[i]
			ctxs[i].release()
		}
	}
}

// steerRounds sweeps the pauses 1 … looks+steerBeyond over rounds of steerKeys
// calls, each pause given to steerCopies calls of a round (more when the
// pauses left are fewer), and runs round on each with locks of a ttl of the
// sweep's. round returns, for each call, whether it covered its pause (it
// stopped there in time, or returned without stopping because it makes
// fewer looks) rather than waiting blocked behind another stopped call, and,
// if a call stopped only after its lock may have expired, how long after the
// round began it stopped. Pauses not covered run again in the next round.
//
// The ttl starts at start, short, since each round waits for its locks to
// expire, and doubles, up to steerTTL, after a round in which a call
// stopped too late or no call covered its pause: a store or a machine slower
// than start allowed for. A sweep that still cannot cover a pause at
// steerTTL fails, noting the delay for the kit's lateness rule (see judge):
// on a machine that slow, what the case saw proves nothing.
func (e *env) steerRounds(t testing.TB, looks int, start time.Duration, round func(pauses []int, ttl time.Duration) (covered []bool, tooLate time.Duration)) {
	t.Helper()
	pending := make([]int, min(looks+steerBeyond, maxLooks))
	for i := range pending {
		pending[i] = i + 1
	}
	n := e.steerKeys()
	per := max(1, n/steerCopies)
	ttl, stuck := min(start, e.steerTTL()), 0
	for len(pending) > 0 {
		this := pending[:min(per, len(pending))]
		pending = pending[len(this):]
		pauses := make([]int, n)
		for i := range pauses {
			pauses[i] = this[i%len(this)]
		}
		ran, tooLate := round(pauses, ttl)
		covered := map[int]bool{}
		for i, p := range pauses {
			if ran[i] {
				covered[p] = true
			}
		}
		var again []int
		for _, p := range this {
			if !covered[p] {
				again = append(again, p)
			}
		}
		pending = append(again, pending...)
		if len(covered) > 0 {
			stuck = 0
		}
		if tooLate == 0 && len(covered) > 0 {
			continue
		}
		if ttl < e.steerTTL() {
			ttl = min(2*ttl, e.steerTTL())
			continue
		}
		if len(covered) > 0 {
			continue
		}
		if stuck++; stuck == steerStuck {
			noteCall(t, tooLate)
			failWith(t, fixTooSlow, "the kit could not stop a call at its looks number %v at its context before the call's lock, of a ttl of %v, could expire, in %d rounds in a row: every call either waited behind another stopped call for more than %v or stopped too late (the latest %v after its round began); the store, or this machine, is too slow for Options.TTL %v", again, ttl, steerStuck, ttl/4, tooLate.Round(time.Millisecond), e.opts.TTL)
		}
	}
}

// steerStuck is how many rounds in a row at steerTTL may cover no pause
// before a sweep gives up.
const steerStuck = 3

// steerBeyond is how many looks past those of an unsteered call the
// steered cases sweep: a call of a pipelining client (rueidis's) that is
// stopped looks at its context more often than one that is not, since its
// answer has then arrived before its next look, so the window between its
// round trips can lie a look or two past the count.
const steerBeyond = 3

// steerCopies is how many calls of a round stop at the same look: a client
// whose calls do not all look at their context the same number of times
// (rueidis's, whose looks depend on its pipeline's state) then still has a
// call stopped in each window.
const steerCopies = 6

// countLooks returns how many times a call of op looks at its context, the
// most over a few calls: the steered cases stop calls at each look from the
// first to steerBeyond past this. It also returns how long the quickest of
// those calls took, from which steerStart sizes the sweep's first ttl.
func (e *env) countLooks(t testing.TB, op string, ttl time.Duration) (looks int, quickest time.Duration) {
	t.Helper()
	most := 0
	for i := range 3 {
		key, owner := e.key(), e.owner("counted")
		if op != "acquire" {
			e.mustAcquire(t, key, owner, holdTTL, "no lock has ever held this key")
		}
		ctx := newSteered(e.opts.Timeout, 0)
		start := time.Now()
		r := e.do(ctx, op, key, owner, ttl)
		took := time.Since(start)
		if i == 0 || took < quickest {
			quickest = took
		}
		ctx.release()
		if r.err != nil {
			callFailedAfter(t, fmt.Sprintf("%s(%s, %q)", steeredCall[op], show(key), owner), r.err, took)
		}
		if op == "acquire" && r.ok {
			e.cleanupRelease(t, key, owner)
		}
		most = max(most, int(ctx.looks.Load()))
	}
	return min(most, maxLooks), quickest
}

// maxLooks bounds the looks the steered cases sweep, so that a client that
// looks at its context in a loop cannot make a case run for ever.
const maxLooks = 64

// do calls op ("acquire", "renew", "release", or "batch": RenewBatch of
// the one lease) for owner through its store.
func (e *env) do(ctx context.Context, op, key, owner string, ttl time.Duration) result {
	var r result
	s := e.storeOf(owner)
	switch op {
	case "acquire":
		r.token, r.ok, r.err = s.Acquire(ctx, key, owner, ttl)
	case "renew":
		r.ok, r.err = s.Renew(ctx, key, owner, holdTTL)
	case "release":
		r.ok, r.err = s.Release(ctx, key, owner)
	case "batch":
		// The case skips a store that is no BatchRenewer (see batcher).
		b, ok := s.(core.BatchRenewer)
		if !ok {
			r.err = fmt.Errorf("this client of the store (%T) is no core.BatchRenewer, unlike the first", s)
			return r
		}
		var renewed []bool
		renewed, r.err = b.RenewBatch(ctx, []core.Lease{{Key: key, Owner: owner, TTL: holdTTL}})
		if r.err == nil {
			r.err = answerCount(1, len(renewed))
		}
		r.ok = r.err == nil && renewed[0]
	}
	return r
}

// steeredCall names op's method, for messages.
var steeredCall = map[string]string{"acquire": "Acquire", "renew": "Renew", "release": "Release", "batch": "RenewBatch"}

// steerKeys is how many calls a steered round stops at once: half of
// Options.Callers, so that the stopped calls, which may each hold a
// connection of a pool of Options.Callers, leave the takeovers room, and
// the takeovers can go through the stores of the other half of the racing
// callers, which no stopped call uses.
func (e *env) steerKeys() int { return max(1, e.opts.Callers/2) }

// steerTTL is the longest ttl of the steered cases' locks: TTL/5 leaves
// the round trips of a store that passes the expiry cases at TTL room. It
// is also the ttl of other cases' short-lived locks.
func (e *env) steerTTL() time.Duration { return max(e.opts.TTL/5, 6*time.Millisecond) }

// steerStart is the ttl a sweep starts with: each round waits for its locks
// to expire, so the shorter the quicker, but a round's steerKeys calls must
// all have stopped before their locks may expire, on a store that may serve
// them one at a time. So steerKeys times the quickest call measured, four
// times over, and at least steerFloor; steerRounds doubles it if that was
// too short.
func (e *env) steerStart(quickest time.Duration) time.Duration {
	return max(steerFloor, 4*time.Duration(e.steerKeys())*quickest)
}

// steerFloor is the shortest ttl of a sweep: a round also waits a quarter
// of it for calls that neither stop nor return, which must leave a
// goroutine time to be scheduled under the race detector.
const steerFloor = 50 * time.Millisecond

// steerTakeover returns the case that stops op at each of its looks while
// the lock it concerns expires and a new owner takes the key over.
func steerTakeover(op string) func(t testing.TB, e *env) {
	return func(t testing.TB, e *env) {
		if op == "batch" {
			e.batcher(t)
		}
		looks, quickest := e.countLooks(t, op, e.steerTTL())
		if looks == 0 {
			skip(t, e.name, "the store's "+steeredCall[op]+" calls never look at their context (Done or Err), so the kit cannot stop them between round trips", "pass the call's context to the client library")
		}
		stopped, rounds, again, longest := 0, 0, 0, time.Duration(0)
		// blocking: the last round run again with more patience had every
		// takeover come back only once the stopped calls went on, while
		// this process ran on time. The stopped calls themselves then hold
		// what the takeovers wait for (SQLite's write lock, a row, a
		// pool's one connection), and more patience waits for nothing.
		blocking := false
		e.steerRounds(t, looks, e.steerStart(quickest), func(pauses []int, ttl time.Duration) ([]bool, time.Duration) {
			meter := lateness.Start()
			n, covered, tooLate, late := e.steerTakeoverAt(t, op, pauses, ttl, ttl/4)
			meter.Stop()
			blocked := allLate(late, n) && !meter.Explains(ttl/4)
			if redo := latePauses(pauses, late); redo != nil && !(blocking && blocked) {
				// The takeovers of these calls came back after the kit
				// let the calls go on: blocked behind a stopped call, or
				// slow on a loaded machine. Once more, with patience.
				meter := lateness.Start()
				m, _, _, late := e.steerTakeoverAt(t, op, redo, ttl, steerPatience*ttl)
				meter.Stop()
				blocking = allLate(late, m) && !meter.Explains(ttl/4)
				n += m
				rounds++
				again++
			}
			stopped, rounds, longest = stopped+n, rounds+1, max(longest, ttl)
			return covered, tooLate
		})
		t.Logf("conformance: %s: stopped %d %s calls in %d rounds (%d of them run again with more patience), with locks of a ttl of up to %v, at each of their %d looks at their context and %d past them, while their locks expired and new owners took the keys over", e.name, stopped, steeredCall[op], rounds, again, longest, looks, steerBeyond)
	}
}

// steerTakeoverAt runs one round of steerTakeover: a key per pause, its
// call stopped at that look. It returns how many calls stopped, which calls
// covered their pause (see steerRounds), and, if a stopped Renew or Release
// stopped after its lock may have expired (it may then have read no lock
// at all, and its round trips' window went untested), how long after the
// round's first Acquire was sent the latest of them stopped; and which
// calls' takeovers returned only after the kit, having waited patience for
// a takeover to return, let every stopped call go on.
func (e *env) steerTakeoverAt(t testing.TB, op string, pauses []int, ttl, patience time.Duration) (stopped int, covered []bool, tooLate time.Duration, late []bool) {
	t.Helper()
	n := len(pauses)
	// The new owners call through the other half of the racing callers'
	// stores: a call stopped inside its client may hold that client's
	// connection, and the takeover must not wait behind it.
	keys, olds, news := e.keys(n), e.racers("old", n, 0), e.racers("new", 2*n, 0)[n:]
	// One call through each new owner's store before the round, so that
	// the takeovers do not open connections when they are timed. Its
	// answer does not matter (other cases judge a Release of a free key).
	race(n, func(i int) {
		ctx, cancel := e.ctx()
		defer cancel()
		_, _ = e.storeOf(news[i]).Release(ctx, keys[i], news[i])
	})
	// No lock of the round can expire before ttl after this, on any clock
	// that runs at the real rate: the store starts a ttl once it has the
	// call.
	sent := time.Now()
	for i := range keys {
		e.cleanupRelease(t, keys[i], news[i])
		if op == "acquire" {
			e.cleanupRelease(t, keys[i], olds[i])
			continue
		}
		e.mustAcquire(t, keys[i], olds[i], ttl, "no lock has ever held this key")
	}
	tl := e.startTimeline()
	ctxs, paused, blocked, old, wait := e.steerCalls(pauses, e.opts.Timeout+4*ttl, ttl/4, ttl, func(i int, ctx context.Context) result {
		return e.do(ctx, op, keys[i], olds[i], ttl)
	})
	covered = make([]bool, n)
	for i := range covered {
		covered[i] = !blocked[i]
		// A stopped Acquire's lock counts from its stop; a Renew or
		// Release must stop while the lock it concerns is live.
		if paused[i] && op != "acquire" && e.opts.AdvanceTime == nil {
			if at := ctxs[i].pausedAt.Sub(sent); at >= ttl {
				covered[i], tooLate = false, max(tooLate, at)
			}
		}
	}
	if !slices.Contains(paused, true) {
		wait()
		return 0, covered, tooLate, nil // the calls made fewer looks than their pauses
	}
	if op == "acquire" {
		// The lock the stopped Acquire may have written is younger
		// than the timeline: count its ttl from the stop.
		tl = e.startTimeline()
	}
	// The new owners take the keys of the stopped calls over once their
	// locks have expired (gone already allows the store's declared
	// lateness). A lock renewed before the stop stays held, and the try
	// fails; trying again would only wait for a renewal of a minute, so a
	// takeover of a stopped Renew or Release tries once. A stopped Acquire
	// may have written its lock later than the timeline started (a
	// pipelining client sends it while the call is stopped), so its
	// takeover tries again until 2 × ttl.
	taken := make([]result, n)
	tl.until(e.gone(ttl))
	// Each stopped call goes on once the takeover of its key has returned,
	// so that what it answers is judged against a takeover that is over.
	// A takeover may wait for a row, a pool's mutex or its one connection
	// that another stopped call holds: once no takeover call has returned
	// for patience, every call still stopped goes on, and the blocked
	// takeovers with them; late says which returned after that.
	var mu sync.Mutex
	gaveUp := false // the stopped calls all went on: guarded by mu
	late = make([]bool, n)
	progress := make(chan struct{}, 1) // a takeover call returned
	notify := func() {
		select {
		case progress <- struct{}{}:
		default: // the watchdog has the news already
		}
	}
	var took sync.WaitGroup
	took.Add(n)
	go func() {
		all := make(chan struct{})
		go func() { took.Wait(); close(all) }()
		quiet := time.NewTimer(patience)
		defer quiet.Stop()
		for {
			select {
			case <-all:
				return
			case <-progress:
				quiet.Reset(patience)
			case <-quiet.C:
				if e.opts.AdvanceTime != nil {
					quiet.Reset(patience) // the store's clock stands still: no row waits
					continue
				}
				mu.Lock()
				gaveUp = true
				mu.Unlock()
				for _, c := range ctxs {
					c.goOn()
				}
				return
			}
		}
	}()
	race(n, func(i int) {
		defer took.Done()
		if !paused[i] {
			return
		}
		for {
			ctx, cancel := e.ctx()
			start := time.Now()
			taken[i].token, taken[i].ok, taken[i].err = e.storeOf(news[i]).Acquire(ctx, keys[i], news[i], holdTTL)
			taken[i].timeFrom(start)
			cancel()
			if taken[i].ok || taken[i].err != nil || op != "acquire" || e.opts.AdvanceTime != nil || tl.elapsed() > 2*ttl {
				mu.Lock()
				late[i] = gaveUp
				mu.Unlock()
				ctxs[i].goOn()
				notify()
				return
			}
			notify()
			time.Sleep(ttl / 10)
		}
	})
	wait()
	for i := range n {
		if !paused[i] {
			continue
		}
		stopped++
		if old[i].err != nil {
			callFailedAfter(t, fmt.Sprintf("%s of %s by %s (stopped by the kit at its look number %d at its context, then let go on)", steeredCall[op], show(keys[i]), olds[i], pauses[i]), old[i].err, old[i].took)
		}
		if taken[i].err != nil {
			callFailedAfter(t, fmt.Sprintf("Acquire(%s, %q) after the old lock expired", show(keys[i]), news[i]), taken[i].err, taken[i].took)
		}
		if !taken[i].ok {
			continue // the old call took effect before the stop: nothing to judge
		}
		where := fmt.Sprintf("The kit stopped %s's %s of %s at the call's look number %d at its context (client libraries look before each round trip); while it was stopped, the lock expired and %s acquired the key (token %d); then the kit let the call go on",
			olds[i], steeredCall[op], show(keys[i]), pauses[i], news[i], taken[i].token)
		switch {
		case (op == "renew" || op == "batch") && old[i].ok:
			proof(t, "%s, and it returned true: two owners now believe they hold the key. A %s that answers true must have extended a live lock of its owner, and then no one else could have acquired the key; this one read the owner in one round trip and wrote in another", where, steeredCall[op])
		case op == "acquire" && old[i].ok && old[i].token >= taken[i].token:
			proof(t, "%s, and it returned acquired with token %d, not less than the new owner's %d. The Acquire that was stopped came first, so its token must be the smaller: this store draws the token in a round trip of its own, apart from taking the lock", where, old[i].token, taken[i].token)
		}
		ctx, cancel := e.ctx()
		start := time.Now()
		ok, err := e.storeOf(news[i]).Renew(ctx, keys[i], news[i], holdTTL)
		cancel()
		if err != nil {
			callFailedAfter(t, fmt.Sprintf("Renew(%s, %q) by the new holder", show(keys[i]), news[i]), err, time.Since(start))
		}
		if !ok {
			proof(t, "%s, and it returned %v; afterwards Renew by the new holder %s returned false: the old holder's resumed %s wrote over the new holder's lock, having checked the owner in an earlier round trip", where, old[i].ok, news[i], steeredCall[op])
		}
	}
	return stopped, covered, tooLate, late
}

// steerPatience is how many ttls a round run again for late takeovers
// waits for a takeover call to return before it lets the stopped calls go
// on (a first round waits a quarter of a ttl).
const steerPatience = 2

// allLate reports whether the takeovers of all stopped calls of a round,
// of which late says which were late, were late.
func allLate(late []bool, stopped int) bool {
	n := 0
	for _, l := range late {
		if l {
			n++
		}
	}
	return n == stopped
}

// latePauses returns, for a round run again, the pauses of the calls whose
// takeovers were late, repeated to fill as many calls as pauses has; nil
// if there were none.
func latePauses(pauses []int, late []bool) []int {
	var again []int
	for i, l := range late {
		if l {
			again = append(again, pauses[i])
		}
	}
	if again == nil {
		return nil
	}
	out := make([]int, len(pauses))
	for i := range out {
		out[i] = again[i%len(again)]
	}
	return out
}

// acquireCutShort cancels Acquire calls at each of their looks at their
// context, lets them return, and requires every key to be free once the
// ttl has passed: whatever the outcome of a cut-short Acquire, acquired,
// not acquired or an error, no lock may outlive its ttl.
func acquireCutShort(t testing.TB, e *env) {
	looks, quickest := e.countLooks(t, "acquire", e.steerTTL())
	if looks == 0 {
		skip(t, e.name, "the store's Acquire calls never look at their context (Done or Err), so the kit cannot cut them short between round trips", "pass the call's context to the client library")
	}
	type cut struct {
		key, owner string
		pause      int
		ttl        time.Duration
	}
	var cuts []cut
	longest := time.Duration(0)
	e.steerRounds(t, looks, e.steerStart(quickest), func(pauses []int, ttl time.Duration) ([]bool, time.Duration) {
		longest = max(longest, ttl)
		n := len(pauses)
		keys, owners := e.keys(n), e.racers("cut", n, len(cuts))
		for i := range keys {
			e.cleanupRelease(t, keys[i], owners[i])
		}
		ctxs, paused, blocked, _, wait := e.steerCalls(pauses, e.opts.Timeout, ttl/4, ttl, func(i int, ctx context.Context) result {
			return e.do(ctx, "acquire", keys[i], owners[i], ttl)
		})
		ran := make([]bool, n)
		for i := range n {
			ran[i] = !blocked[i]
			if paused[i] {
				ctxs[i].cancel(context.Canceled)
				cuts = append(cuts, cut{keys[i], owners[i], pauses[i], ttl})
			}
		}
		wait()
		return ran, 0
	})
	// Every call has returned: whatever each wrote, its ttl started before
	// now. Each key must be free by 2 × ttl (a lock written late by a
	// server that read the cancelled statement from its socket has had a
	// whole ttl more); a second look, as late as a sweep at steerTTL
	// would make it, rules out a slow server.
	tl := e.startTimeline()
	for _, at := range []time.Duration{2 * longest, 4 * e.steerTTL()} {
		if len(cuts) == 0 {
			break
		}
		tl.until(e.lateness(longest) + at)
		left := cuts[:0]
		for _, c := range cuts {
			probe := e.ownerElsewhere("after-cut")
			if _, ok := e.acquire(t, c.key, probe, holdTTL); ok {
				e.cleanupRelease(t, c.key, probe)
				continue
			}
			left = append(left, c)
		}
		cuts = left
	}
	if len(cuts) > 0 {
		c := cuts[0]
		t.Fatalf("%d of the Acquire calls the kit cancelled left their key locked beyond their ttl: the first, Acquire(%s, %q, %v), cancelled at its look number %d at its context (client libraries look before each round trip), still held its key %v after it returned; the contract requires every lock to expire by its ttl, whatever became of the call that wrote it", len(cuts), show(c.key), c.owner, c.ttl, c.pause, tl.elapsed().Round(time.Millisecond))
	}
	t.Logf("conformance: %s: cut Acquire calls short at each of their %d looks at their context", e.name, looks)
}
