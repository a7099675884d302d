package conformance

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// raceCases check the "atomic methods" rule by releasing Options.Callers
// goroutines together, against one key or spread over several (see
// keyRaces).
func raceCases() []Case {
	return []Case{
		{
			Name:       "race-acquire-free-key",
			Catches:    "an Acquire that reads whether the key is free and then writes in a separate step, so that several concurrent callers all win a free key.",
			Fix:        "Make Acquire one atomic statement or script (an upsert whose update is conditional on expiry, SET NX), or a transaction that locks what it reads; never a read followed by a separate write.",
			Concurrent: true,
			run:        raceAcquireFreeKey,
		},
		{
			Name:       "race-takeover-expired-key",
			Catches:    "a takeover of an expired lock that is not atomic (read the expiry, then overwrite), so that several concurrent callers all take over one expired key.",
			Fix:        "Take over an expired lock in the same single conditional write that takes a free key (the upsert's WHERE the lock has expired), so that one caller's write matches.",
			Concurrent: true,
			Waits:      true,
			lateFrees:  true,
			run:        raceTakeoverExpiredKey,
		},
		{
			Name:       "race-rounds",
			Catches:    "a store that lets two callers into the same round of acquire, hold and release, or hands the winners of successive rounds tokens that do not grow.",
			Fix:        "Make Acquire and Release each one atomic statement, and draw the token inside the statement that takes the lock.",
			Concurrent: true,
			run:        raceRounds,
		},
		{
			Name:       "race-renew-release-takeover",
			Catches:    "a Renew or Release that checks the owner and then writes in a separate step (GET then PEXPIRE, GET then DEL), so that an old holder whose lock expires in between extends or frees the lock of the owner that took the key over.",
			Fix:        "Make Renew and Release each one conditional write (UPDATE … WHERE key = ? AND owner = ? AND the lock has not expired; in Redis, one script that checks the owner and writes), never a read followed by a separate write.",
			Concurrent: true,
			Waits:      true,
			run:        raceRenewReleaseTakeover,
		},
		{
			Name:       "race-distinct-keys",
			Catches:    "a store whose concurrent calls on different keys interfere (a table lock, a conflict or deadlock reported as not acquired, a shared record), so that free keys are refused under load.",
			Fix:        "Lock only the key's own record (no table locks), retry serialisation failures and deadlocks inside the store, and give the pool at least Options.Callers connections.",
			Concurrent: true,
			run:        raceDistinctKeys,
		},
	}
}

// keyRaces is how many races on a key race-acquire-free-key,
// race-takeover-expired-key and race-rounds each run at least, spread over
// keys so that the rounds stay few.
//
// A flaw may open its race window on a fraction p of calls only: a slow
// path, a retry after a conflict, the first acquisition of a key, a
// statement that waits for a lock now and then. A race on a key shows it
// when the call that reaches the store first takes the flawed path and
// another racer gets in before it writes: with probability p at least, as
// the racers of a key are released together. The races are independent, so
// the kit misses the flaw with probability (1-p)^keyRaces: a window that
// opens on 1 call in 20 is missed with probability 0.95^280 ≈ 6 × 10^-7,
// 1 in 50 with 0.35%, 1 in 100 with 6%. broken_test.go proves the first
// figure against a store whose Acquire reads and then writes on 1 call in
// 20.
const keyRaces = 280

// racersPerKey is how many callers race on each key when a round spreads
// them over keys: enough that one of them enters the window of a flawed
// first call, few enough that a round covers Callers/4 keys.
const racersPerKey = 4

// keysPerRound returns how many keys a round of Callers racers covers.
func (e *env) keysPerRound() int { return max(1, e.opts.Callers/racersPerKey) }

// keys returns n fresh keys.
func (e *env) keys(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = e.key()
	}
	return out
}

// won is the outcome of a round of races: the winner of each key ("" for
// a key nobody won), and whether they have released their locks (else the
// case's cleanup does).
type won struct {
	keys, owners []string
	tokens       []int64
	released     bool
}

// untaken returns the indices of the keys nobody won.
func (w *won) untaken() []int {
	var out []int
	for k, o := range w.owners {
		if o == "" {
			out = append(out, k)
		}
	}
	return out
}

// raceKeys releases the Options.Callers racers together against keys,
// racer i on keys[i mod len(keys)], and requires exactly one winner per
// key, with a positive token. Racer i calls through caller (i + round)'s
// store: whichever racer the scheduler favours, the winners of successive
// rounds call through different stores. what describes the keys.
func (e *env) raceKeys(t testing.TB, keys []string, round int, what string) *won {
	t.Helper()
	w := e.raceRound(t, keys, round, what)
	if k := w.untaken(); len(k) > 0 {
		t.Fatalf("0 of %d concurrent Acquire calls on %s (%s) returned acquired; the contract requires exactly one: a key no live lock holds must be taken by one of the callers racing for it", (e.opts.Callers-k[0]+len(keys)-1)/len(keys), show(keys[k[0]]), what)
	}
	return w
}

// raceRound is raceKeys that lets a key go untaken: it requires at most
// one winner per key.
func (e *env) raceRound(t testing.TB, keys []string, round int, what string) *won {
	t.Helper()
	owners := e.racers("racer", e.opts.Callers, round)
	res := make([]result, len(owners))
	race(len(owners), func(i int) {
		ctx, cancel := e.ctx()
		defer cancel()
		defer res[i].timeFrom(time.Now())
		res[i].token, res[i].ok, res[i].err = e.storeOf(owners[i]).Acquire(ctx, keys[i%len(keys)], owners[i], holdTTL)
	})
	w := &won{keys: keys, owners: make([]string, len(keys)), tokens: make([]int64, len(keys))}
	var all []string // every racer that won, released when the case ends unless w.released
	for i, r := range res {
		if r.ok && r.err == nil {
			all = append(all, owners[i])
		}
	}
	t.Cleanup(func() {
		if !w.released {
			race(len(all), func(j int) {
				i := slices.Index(owners, all[j])
				ctx, cancel := e.ctx()
				defer cancel()
				_, _ = e.storeOf(all[j]).Release(ctx, keys[i%len(keys)], all[j])
			})
		}
	})
	e.winners(t, res, fmt.Sprintf("Acquire of %s", what))
	for k, key := range keys {
		var ws []int
		for i := k; i < len(res); i += len(keys) {
			if res[i].ok {
				ws = append(ws, i)
			}
		}
		if len(ws) > 1 {
			t.Fatalf("%d of %d concurrent Acquire calls on %s (%s) returned acquired; the contract requires exactly one: checking that no live lock holds the key and writing the new one must be a single atomic step", len(ws), (len(res)-k+len(keys)-1)/len(keys), show(key), what)
		}
		if len(ws) == 0 {
			continue
		}
		if token := res[ws[0]].token; token <= 0 {
			t.Fatalf("the winner of a race on %s got token %d; the contract requires a positive fencing token", show(key), token)
		}
		w.owners[k], w.tokens[k] = owners[ws[0]], res[ws[0]].token
	}
	return w
}

// releaseWon has the winners of w release their keys, together, and requires
// every Release to return true; what says why they hold them.
func (e *env) releaseWon(t testing.TB, w *won, what string) {
	t.Helper()
	res := make([]result, len(w.keys))
	race(len(w.keys), func(k int) {
		if w.owners[k] == "" {
			res[k].ok = true // nobody won the key: nothing to release
			return
		}
		ctx, cancel := e.ctx()
		defer cancel()
		defer res[k].timeFrom(time.Now())
		res[k].ok, res[k].err = e.storeOf(w.owners[k]).Release(ctx, w.keys[k], w.owners[k])
	})
	e.winners(t, res, "Release of the keys by the winners of their races")
	for k, r := range res {
		if !r.ok {
			t.Fatalf("Release of %s by its holder %s returned false; the contract requires true: %s", show(w.keys[k]), w.owners[k], what)
		}
	}
	w.released = true
}

// raceAcquireFreeKey races every caller on one free key, then, to catch a
// window that opens on few calls (see keyRaces), the callers spread over
// fresh keys, round after round.
func raceAcquireFreeKey(t testing.TB, e *env) {
	key := e.key()
	w := e.raceKeys(t, []string{key}, 0, fmt.Sprintf("a free key, by all %d callers", e.opts.Callers))
	e.mustBeHeld(t, key, "the race's winner holds it")
	e.releaseWon(t, w, "it won the race")
	for round, n := 1, 0; n < keyRaces; round++ {
		keys := e.keys(e.keysPerRound())
		// A second racer on a key would also win if the winner's Acquire
		// wrote nothing: no probe is needed.
		w := e.raceKeys(t, keys, round, fmt.Sprintf("free keys, round %d", round))
		e.releaseWon(t, w, fmt.Sprintf("it won round %d", round))
		n += len(keys)
	}
}

// raceTakeoverExpiredKey lets keyRaces locks expire, then races the
// callers on them, a round of keys at a time.
//
// A key that nobody wins in its round was still held: the store had not
// yet freed the lock, late, as a store that expires locks by a background
// scan can be after freeing hundreds at once on a busy machine. That is
// expiry-frees-key's matter, not this case's: the key is raced again in a
// later round, until it has been held expiryRaceGrace past the time by
// which it must be gone.
func raceTakeoverExpiredKey(t testing.TB, e *env) {
	ttl := e.opts.TTL
	per := e.keysPerRound()
	keys := e.keys((keyRaces + per - 1) / per * per)
	// The expiring locks are taken by the callers, together; they are
	// left to expire, and need no cleanup.
	owners := e.racers("expiring", len(keys), 0)
	first := make([]result, len(keys))
	race(len(keys), func(i int) {
		ctx, cancel := e.ctx()
		defer cancel()
		defer first[i].timeFrom(time.Now())
		first[i].token, first[i].ok, first[i].err = e.storeOf(owners[i]).Acquire(ctx, keys[i], owners[i], ttl)
	})
	e.winners(t, first, fmt.Sprintf("Acquire of %d distinct free keys", len(keys)))
	for i, r := range first {
		if !r.ok {
			t.Fatalf("Acquire of the free key %s returned not acquired; the contract requires acquired: no lock has ever held this key", show(keys[i]))
		}
	}
	tl := e.startTimeline()
	gone := e.gone(ttl)
	tl.until(gone)
	queue := make([]int, len(keys)) // indices into keys, in the order they are raced
	for i := range queue {
		queue[i] = i
	}
	var held, again int // keys found held in their round; the rounds run again
	latest := gone      // the latest time a key was found held
	for round := 0; len(queue) > 0; round++ {
		batch := queue[:min(per, len(queue))]
		queue = queue[len(batch):]
		ks := make([]string, len(batch))
		for k, i := range batch {
			ks[k] = keys[i]
		}
		at := tl.elapsed()
		w := e.raceRound(t, ks, round, fmt.Sprintf("keys whose locks expired, round %d", round+1))
		for k, token := range w.tokens {
			if w.owners[k] != "" && token <= first[batch[k]].token {
				t.Fatalf("the winner of the takeover of %s got token %d, not greater than the expired lock's %d; the contract requires tokens that grow across expiries", show(ks[k]), token, first[batch[k]].token)
			}
		}
		untaken := w.untaken()
		if len(untaken) > 0 {
			if at > gone+expiryRaceGrace(ttl) {
				failWith(t, fixLateExpiry, "none of the concurrent Acquire calls on %s took it %v after its lock was taken with a ttl of %v and never renewed, and %v after it must have been gone (the ttl, a sixth of it, and the %v the store declares it may be late by): expired means gone", show(ks[untaken[0]]), at.Round(time.Millisecond), ttl, (at - gone).Round(time.Millisecond), e.lateness(ttl))
			}
			for _, k := range untaken {
				queue = append(queue, batch[k])
			}
			held += len(untaken)
			latest = at
			if len(untaken) == len(batch) {
				again++
				tl.until(at + max(ttl/20, time.Millisecond))
			}
		}
		e.releaseWon(t, w, "it won the takeover")
	}
	if held > 0 {
		t.Logf("conformance: race-takeover-expired-key: %d races found their key still held, the last %v after it must have been gone; those keys were raced again (%d rounds with no key free)", held, (latest - gone).Round(time.Millisecond), again)
	}
}

// expiryRaceGrace is how long past the time by which it must be gone
// race-takeover-expired-key races a key whose lock a store has not yet
// freed, before it fails the case: twice the ttl.
func expiryRaceGrace(ttl time.Duration) time.Duration { return 2 * ttl }

// raceRounds races the callers, spread over a few keys, round after round:
// each round's winners hold their keys, then release them, and the next
// round's winners must get greater tokens.
func raceRounds(t testing.TB, e *env) {
	keys := e.keys(e.keysPerRound())
	rounds := (keyRaces + len(keys) - 1) / len(keys)
	last := make([]int64, len(keys))
	for round := range rounds {
		w := e.raceKeys(t, keys, round, fmt.Sprintf("round %d of %d", round+1, rounds))
		for k, token := range w.tokens {
			if round > 0 && token <= last[k] {
				t.Fatalf("the winner of round %d on %s got token %d, not greater than the previous round's %d; the contract requires tokens that grow across releases", round+1, show(keys[k]), token, last[k])
			}
			last[k] = token
		}
		e.releaseWon(t, w, fmt.Sprintf("it won round %d", round+1))
	}
}

func raceDistinctKeys(t testing.TB, e *env) {
	n := 4 * e.opts.Callers
	keys := make([]string, n)
	for i := range keys {
		keys[i] = e.key()
	}
	owners := e.racers("K", n, 0)
	res := make([]result, n)
	race(n, func(i int) {
		ctx, cancel := e.ctx()
		defer cancel()
		defer res[i].timeFrom(time.Now())
		res[i].token, res[i].ok, res[i].err = e.storeOf(owners[i]).Acquire(ctx, keys[i], owners[i], holdTTL)
	})
	for i, r := range res {
		if r.ok && r.err == nil {
			e.cleanupRelease(t, keys[i], owners[i])
		}
	}
	won := e.winners(t, res, fmt.Sprintf("Acquire of %d distinct free keys", n))
	if len(won) != n {
		t.Fatalf("only %d of %d concurrent Acquire calls on distinct free keys returned acquired; the contract requires all: a key no live lock holds must be acquired, however many other keys are being acquired at the same time", len(won), n)
	}
	for i, r := range res {
		if r.token <= 0 {
			t.Fatalf("concurrent Acquire of %s returned token %d; the contract requires a positive fencing token", show(keys[i]), r.token)
		}
	}
	released := make([]result, n)
	race(n, func(i int) {
		ctx, cancel := e.ctx()
		defer cancel()
		defer released[i].timeFrom(time.Now())
		released[i].ok, released[i].err = e.storeOf(owners[i]).Release(ctx, keys[i], owners[i])
	})
	if won := e.winners(t, released, fmt.Sprintf("Release of %d distinct keys by their holders", n)); len(won) != n {
		t.Fatalf("only %d of %d concurrent Release calls by the holders of distinct keys returned true; the contract requires all: each owner holds a live lock on its own key", len(won), n)
	}
}

// raceRenewReleaseTakeover lets many locks expire while their holders renew
// or release them and new owners take the keys over, all at once, so that
// the old holders' calls straddle the expiry. A correct store decides each
// call atomically: the old holder's call succeeds only if it took effect
// before the expiry, and then the takeover fails (renew) or comes after it
// (release). The case's history check judges the answers; afterwards every
// new owner that won must still hold its key.
func raceRenewReleaseTakeover(t testing.TB, e *env) {
	ttl := e.steerTTL()
	for _, op := range []string{"renew", "release", "renew", "release"} {
		n := e.opts.Callers
		// Each old holder and the new owner of its key call through
		// different callers' stores, as two instances would.
		keys, olds, news := make([]string, n), e.racers("old", n, 0), e.racers("new", n, 1)
		for i := range keys {
			keys[i] = e.key()
			e.mustAcquire(t, keys[i], olds[i], ttl, "no lock has ever held this key")
			e.cleanupRelease(t, keys[i], news[i])
		}
		r := e.startExpiryRace(ttl, n)
		old, taken := make([]result, n), make([]result, n)
		race(2*n+1, func(j int) {
			switch {
			case j == 2*n:
				r.expire()
			case j < n:
				r.waitFor(j)
				ctx, cancel := e.ctx()
				defer cancel()
				defer old[j].timeFrom(time.Now())
				if op == "renew" {
					old[j].ok, old[j].err = e.storeOf(olds[j]).Renew(ctx, keys[j], olds[j], holdTTL)
				} else {
					old[j].ok, old[j].err = e.storeOf(olds[j]).Release(ctx, keys[j], olds[j])
				}
			default:
				taken[j-n] = r.takeover(j-n, keys[j-n], news[j-n])
			}
		})
		e.winners(t, old, "old holders' "+op+" calls around their locks' expiry")
		e.winners(t, taken, "takeovers around the old locks' expiry")
		for i, r := range taken {
			if !r.ok {
				// Refused: the old holder's lock was live, or renewed;
				// the key is taken over once it expires for good.
				continue
			}
			// An old holder's Renew and the takeover both succeeding is
			// left to the history check, which names the calls.
			e.mustRenew(t, keys[i], news[i], holdTTL, "it took the key over, and no one else may have touched its lock since")
		}
	}
}

// expiryRace paces a race around the expiry of n locks of ttl, taken just
// before it starts: the old holders' calls and the new owners' takeovers.
type expiryRace struct {
	e       *env
	tl      *timeline
	ttl     time.Duration
	late    time.Duration // the store's declared expiry lateness
	n       int
	expired chan struct{}
}

func (e *env) startExpiryRace(ttl time.Duration, n int) *expiryRace {
	r := &expiryRace{e: e, tl: e.startTimeline(), ttl: ttl, n: n, expired: make(chan struct{})}
	if e.late != nil {
		r.late = e.late(ttl)
	}
	return r
}

// at is when, in real time, the i-th call goes out: the calls are spread
// over a window around the expiry, so that some of them straddle it,
// whatever the store's latency (and its declared expiry lateness, by which
// the window reaches further past the ttl).
func (r *expiryRace) at(i int) time.Duration {
	return r.ttl - r.ttl/4 + time.Duration(i)*(r.ttl/2+r.late)/time.Duration(r.n)
}

// waitFor waits, in real time, for the i-th call's turn.
func (r *expiryRace) waitFor(i int) {
	if r.e.opts.AdvanceTime == nil {
		time.Sleep(time.Until(r.tl.start.Add(r.at(i))))
	}
}

// expire, with AdvanceTime, moves the store's clock past the expiry while
// the old holders' calls are in flight; the takeovers come after it.
func (r *expiryRace) expire() {
	if r.e.opts.AdvanceTime != nil {
		time.Sleep(time.Millisecond)
		r.tl.until(r.ttl + r.ttl/10)
	}
	close(r.expired)
}

// takeover has owner take key, the i-th, over. In real time it tries again
// and again from its turn on, so it takes the key within a round trip of
// its expiry: inside the window of an old holder's call that straddles it.
func (r *expiryRace) takeover(i int, key, owner string) result {
	end := r.tl.start.Add(r.at(i) + r.ttl/2 + r.late)
	if r.e.opts.AdvanceTime == nil {
		r.waitFor(i)
	} else {
		<-r.expired
	}
	for {
		var res result
		ctx, cancel := r.e.ctx()
		start := time.Now()
		res.token, res.ok, res.err = r.e.storeOf(owner).Acquire(ctx, key, owner, holdTTL)
		res.timeFrom(start)
		cancel()
		if res.ok || res.err != nil || r.e.opts.AdvanceTime != nil || time.Now().After(end) {
			return res
		}
	}
}
