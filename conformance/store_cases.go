package conformance

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/leasehold/leasehold/core"
)

// storeCases is the "store" group: the rules of core.LockStore, checked by
// calling the store directly. Its cases live in the store_*.go files.
func storeCases() []Case {
	cases := []Case{
		{
			Name:    "acquire-free-key",
			Catches: "a store that refuses a key no one holds, or answers it with a fencing token that is zero or negative.",
			Fix:     "Take a key that no live lock holds in one conditional write, and draw its token from a source that starts at 1 and only grows (a sequence, a counter).",
			run:     acquireFreeKey,
		},
		{
			Name:    "acquire-held-key",
			Catches: "an Acquire that overwrites a live lock (an upsert without a liveness check) or lets its holder acquire it a second time.",
			Fix:     "Make Acquire's write conditional, in the same statement, on no live lock holding the key (INSERT … ON CONFLICT DO UPDATE … WHERE the lock has expired or has no owner; SET NX in Redis), whoever the caller is.",
			run:     acquireHeldKey,
		},
		{
			Name:    "renew-by-holder",
			Catches: "a Renew that reports success without moving the expiry to ttl from now, so a holder that renews on time still loses its lock.",
			Fix:     "Make Renew set the expiry to the store's now + ttl, in milliseconds, where the key, the owner and a live lock match, and return whether a record matched.",
			Waits:   true,
			run:     renewByHolder,
		},
		{
			Name:    "renew-then-expire",
			Catches: "a Renew that moves the expiry further than ttl from now (for example ttl added to the old expiry, or read in a larger unit), so that a holder that stops renewing keeps its lock too long.",
			Fix:     "Compute Renew's new expiry as the store's now + ttl, not the old expiry + ttl, with the ttl in milliseconds.",
			Waits:   true,
			run:     renewThenExpire,
		},
		{
			Name:    "renew-by-non-holder",
			Catches: "a Renew that does not check the owner, or that creates a lock on a free key, letting a stranger extend or take a lock.",
			Fix:     "Renew with a conditional update only (WHERE key = ? AND owner = ? AND the lock has not expired), never an upsert, and return whether it matched.",
			Waits:   true,
			run:     renewByNonHolder,
		},
		{
			Name:    "release-by-non-holder",
			Catches: "a Release that does not check the owner, letting anyone free a lock that another process still relies on.",
			Fix:     "Release with a conditional write that checks the owner and liveness (WHERE key = ? AND owner = ? AND the lock has not expired), and return whether it matched.",
			run:     releaseByNonHolder,
		},
		{
			Name:    "release-by-holder",
			Catches: "a Release that does not free the key (or leaves state behind that blocks the next Acquire), that reports true twice for one lock, or whose lock a late Renew by the former holder brings back.",
			Fix:     "Clear the owner in one conditional write and return true only when that write matched the owner's live lock.",
			run:     releaseByHolder,
		},
		{
			Name:    "expiry-frees-key",
			Catches: "a lock that expires early, late or never on the store's clock (for example one timed on the client's clock, a ttl in the wrong unit or rounded to whole seconds, or a clock read in whole seconds), or a takeover token that is not greater.",
			Fix:     "Compare expiries with the store's own clock (clock_timestamp(), UTC_TIMESTAMP(6), PX or TIME in Redis) in the statement itself, with the ttl in milliseconds, and give a takeover a fresh token from the growing source.",
			Waits:   true,
			run:     expiryFreesKey,
		},
		{
			Name:    "expired-lock-old-owner",
			Catches: "an expired lock that its old owner can still renew or release, before or after another owner takes the key over.",
			Fix:     "Add \"and the lock has not expired\", on the store's clock, to the owner check of Renew and Release.",
			Waits:   true,
			run:     expiredLockOldOwner,
		},
		{
			Name:    "tokens-grow",
			Catches: "fencing tokens that repeat or go back on a key across releases and expiry takeovers (for example a per-key counter that restarts when Release deletes the record).",
			Fix:     "Draw every token, takeovers included, from one source that only grows, and keep the key's record on Release (clear its owner instead of deleting it).",
			Waits:   true,
			run:     tokensGrow,
		},
		{
			Name:    "token-floor-after-reset",
			Catches: "a store without a per-key token floor, whose tokens go back when its token source is reset by a restore or a failover.",
			Fix:     "Draw the token as the greater of the source's next value and the key's last token + 1, in the statement that takes the lock, and keep the key's record (its last token) across Release.",
			run:     tokenFloorAfterReset,
		},
		{
			Name:    "ttl-four-weeks",
			Catches: "a ttl squeezed into 32 bits of milliseconds (2^31 ms is under 25 days), which turns a four-week lock into an expired or short one.",
			Fix:     "Carry the ttl as a 64-bit count of milliseconds all the way to the store (int64, bigint, PX), never a 32-bit integer or column.",
			Waits:   true,
			run:     ttlFourWeeks,
		},
		{
			Name:    "cancelled-context",
			Catches: "a store that answers a call whose context is cancelled instead of failing it, for example with a false that makes a caller give up a lock it holds or believe a free key is taken.",
			Fix:     "Pass the call's context to the client (QueryContext, ExecContext, the client's ctx argument) and return its error, never false, when the call could not be made.",
			run:     cancelledContext,
		},
	}
	cases = append(cases, keyCases()...)
	cases = append(cases, raceCases()...)
	cases = append(cases, steeredCases()...)
	cases = append(cases, ownerCases()...)
	// Last of the group: under AdvanceTime the cases share one clock, and
	// a case placed earlier would move the phase within a second at which
	// the cases after it start.
	cases = append(cases, Case{
		Name:    "renew-shorter-ttl",
		Catches: "a Renew that ignores its ttl when it is shorter than the lock's remaining time (it extends by the Acquire's ttl, or never moves the expiry earlier), so that a lock handed back with a short ttl, as core's hand-back does, stays locked long after it.",
		Fix:     "Set Renew's new expiry to the store's now + the ttl it is given, shorter or longer than the lock's current expiry.",
		Waits:   true,
		run:     renewShorterTTL,
	})
	for i := range cases {
		cases[i].Group = "store"
	}
	return cases
}

func acquireFreeKey(t testing.TB, e *env) {
	for range 3 {
		key, owner := e.key(), e.owner("A")
		token := e.mustAcquire(t, key, owner, holdTTL, "no lock has ever held this key")
		if token <= 0 {
			t.Fatalf("Acquire of the free key %s returned token %d; the contract requires a positive fencing token", show(key), token)
		}
		e.mustRelease(t, key, owner, "the owner has just acquired it")
	}
}

func acquireHeldKey(t testing.TB, e *env) {
	key, a, b := e.key(), e.owner("A"), e.ownerElsewhere("B")
	e.mustAcquire(t, key, a, holdTTL, "no lock has ever held this key")
	if _, ok := e.acquire(t, key, b, holdTTL); ok {
		e.cleanupRelease(t, key, b)
		t.Fatalf("Acquire of %s by another owner returned acquired while %s held it; the contract requires not acquired: a live lock has one holder", show(key), a)
	}
	if _, ok := e.acquire(t, key, a, holdTTL); ok {
		t.Fatalf("Acquire of %s by its own holder returned acquired; the contract requires not acquired: locks are not re-entrant, and a second acquisition would hand out a second fencing token for one lock", show(key))
	}
	e.mustBeHeld(t, key, "the first holder never released it")
	e.mustRelease(t, key, a, "the failed acquisitions must not have changed the holder")
}

func renewByHolder(t testing.TB, e *env) {
	ttl := e.opts.TTL
	at, ok := renewByHolderAt(ttl, e.lateness(ttl))
	if !ok {
		failWith(t, fixTTLForPrecision, "the store declares that it may free a lock of %v up to %v after its ttl (core.ExpiryPrecisioner): at that ttl, no renewal leaves a moment past the original expiry, as late as declared, at which the renewed lock is surely held", ttl, e.lateness(ttl))
	}
	key, a := e.key(), e.owner("A")
	e.mustAcquire(t, key, a, ttl, "no lock has ever held this key")
	tl := e.startTimeline()
	tl.until(at)
	e.mustRenew(t, key, a, ttl, fmt.Sprintf("the owner acquired it %v ago with a ttl of %v", at, ttl))
	tl.until(e.gone(ttl))
	e.mustBeHeld(t, key, fmt.Sprintf("the lock was renewed for %v at %v, so it must outlive its original expiry at %v", ttl, at, ttl))
	e.mustRelease(t, key, a, "the renewed lock is still live")
}

// renewByHolderAt is when renew-by-holder renews its lock, whose check
// that the renewal extended it comes once the original lock is gone, as
// late as the store declares (late): heldCheck, or later for a store that
// declares a lateness, so that the check still comes a sixth of a ttl (the
// kit's tolerance for a call) before the renewed lock's expiry. The
// renewal itself must come a sixth of a ttl before the original expiry; ok
// is false when no moment satisfies both.
func renewByHolderAt(ttl, late time.Duration) (at time.Duration, ok bool) {
	at = max(heldCheck(ttl), goneCheck(ttl)+late+ttl/6-ttl)
	return at, at <= ttl-ttl/6
}

// renewThenExpire renews a lock once, at heldCheck, and checks that it
// outlives its original expiry and is gone at goneCheck after the renewal. The
// new expiry is counted from when the Renew call returned: the store moved
// the expiry to ttl from a moment no later than that.
func renewThenExpire(t testing.TB, e *env) {
	ttl := e.opts.TTL
	key, a := e.key(), e.owner("A")
	e.mustAcquire(t, key, a, ttl, "no lock has ever held this key")
	tl := e.startTimeline()
	tl.until(heldCheck(ttl))
	e.mustRenew(t, key, a, ttl, fmt.Sprintf("the owner acquired it %v ago with a ttl of %v", heldCheck(ttl), ttl))
	renewed := tl.elapsed()
	at := func(d time.Duration) time.Duration { return d.Round(time.Millisecond) }
	// The held check does not move with the store's declared lateness:
	// a store may free a lock late, never early.
	tl.until(goneCheck(ttl))
	e.mustBeHeld(t, key, fmt.Sprintf("it was acquired %v ago with a ttl of %v, so its original expiry has passed, but its owner renewed it for %v, %v after acquiring it, and the store answered true, so it must be held until %v after the acquisition: Renew moves the expiry to ttl from now",
		at(goneCheck(ttl)), ttl, ttl, at(renewed), at(renewed+ttl)))
	tl.until(renewed + e.gone(ttl))
	e.mustBeFree(t, key, holdTTL, fmt.Sprintf("it was acquired %v ago with a ttl of %v and renewed once, for %v, %v after the acquisition, so it expired %v after the acquisition at the latest, %v ago: Renew moves the expiry to ttl from now, not further (not ttl past the old expiry, which would keep it until about %v after the acquisition, nor a ttl read in a larger unit)",
		at(renewed+e.gone(ttl)), ttl, ttl, at(renewed), at(renewed+ttl), at(e.gone(ttl)-ttl), at(2*ttl)))
}

// renewShorterTTL acquires a lock for ten ttls, renews it with one ttl,
// and checks that it is held at heldCheck and gone at goneCheck after the
// renewal: Renew sets the expiry to its own ttl from now, shorter or not,
// as core's hand-back relies on (it renews with a short ttl so that the
// next holder waits little).
func renewShorterTTL(t testing.TB, e *env) {
	ttl := e.opts.TTL
	key, a := e.key(), e.owner("A")
	e.mustAcquire(t, key, a, 10*ttl, "no lock has ever held this key")
	e.mustRenew(t, key, a, ttl, fmt.Sprintf("the owner acquired it with a ttl of %v just now", 10*ttl))
	tl := e.startTimeline()
	tl.until(heldCheck(ttl))
	e.mustBeHeld(t, key, fmt.Sprintf("its owner renewed it with a ttl of %v, %v ago", ttl, heldCheck(ttl)))
	tl.until(e.gone(ttl))
	e.mustBeFree(t, key, holdTTL, fmt.Sprintf("it was acquired with a ttl of %v, then renewed with a ttl of %v, %v ago: Renew sets the expiry to its own ttl from now, even a shorter one, so the lock expired %v after the renewal", 10*ttl, ttl, e.gone(ttl).Round(time.Millisecond), ttl))
}

func renewByNonHolder(t testing.TB, e *env) {
	ttl := e.opts.TTL
	key, a, b := e.key(), e.owner("A"), e.ownerElsewhere("B")

	free := e.key()
	if e.renew(t, free, b, ttl) {
		t.Fatalf("Renew of the free key %s returned true; the contract requires false: only the owner of a live lock may renew it, and Renew never creates one", show(free))
	}
	e.mustBeFree(t, free, holdTTL, "a refused Renew must not have created a lock")

	e.mustAcquire(t, key, a, ttl, "no lock has ever held this key")
	tl := e.startTimeline()
	if e.renew(t, key, b, holdTTL) {
		t.Fatalf("Renew of %s by a non-holder returned true; the contract requires false: only the owner of a live lock may renew it", show(key))
	}
	tl.until(heldCheck(ttl))
	if e.renew(t, key, b, ttl) {
		t.Fatalf("Renew of %s by a non-holder returned true; the contract requires false: only the owner of a live lock may renew it", show(key))
	}
	e.mustBeHeld(t, key, "its owner acquired it less than a ttl ago")
	tl.until(e.gone(ttl))
	e.mustBeFree(t, key, holdTTL, fmt.Sprintf("its owner acquired it with a ttl of %v and never renewed it; the refused renewals by another owner must not have moved its expiry", ttl))
}

func releaseByNonHolder(t testing.TB, e *env) {
	key, a, b := e.key(), e.owner("A"), e.ownerElsewhere("B")
	e.mustAcquire(t, key, a, holdTTL, "no lock has ever held this key")
	if e.release(t, key, b) {
		t.Fatalf("Release of %s by a non-holder returned true; the contract requires false: only the owner of a live lock may release it", show(key))
	}
	e.mustBeHeld(t, key, "a Release by a non-holder must not free it")
	e.mustRenew(t, key, a, holdTTL, "a Release by a non-holder must not change the holder")
	e.mustRelease(t, key, a, "a Release by a non-holder must not change the holder")
}

func releaseByHolder(t testing.TB, e *env) {
	free := e.key()
	if e.release(t, free, e.owner("A")) {
		t.Fatalf("Release of the free key %s returned true; the contract requires false: no one holds it", show(free))
	}

	key, a, b := e.key(), e.owner("A"), e.ownerElsewhere("B")
	e.mustAcquire(t, key, a, holdTTL, "no lock has ever held this key")
	e.mustRelease(t, key, a, "the owner holds a live lock on it")
	if e.release(t, key, a) {
		t.Fatalf("a second Release of %s by its former holder returned true; the contract requires false: the first Release ended the lock", show(key))
	}
	// A renewal in flight when its holder released the lock arrives late:
	// it must not bring the lock back.
	if e.renew(t, key, a, holdTTL) {
		t.Fatalf("Renew of %s by its former holder returned true after it released the lock; the contract requires false: a released lock is gone, and a late renewal must not bring it back", show(key))
	}
	e.mustAcquire(t, key, b, holdTTL, "its holder released it")
	e.mustRelease(t, key, b, "the new owner holds a live lock on it")
}

// expiryFreesKey checks that a lock is held at heldCheck, still held just
// before its ttl (see lateCheck), and free at goneCheck. The timeline
// starts before the Acquire is sent, since the store cannot start the ttl
// earlier.
func expiryFreesKey(t testing.TB, e *env) {
	ttl := e.opts.TTL
	key, a := e.key(), e.owner("A")
	tl := e.startTimeline()
	first := e.mustAcquire(t, key, a, ttl, "no lock has ever held this key")
	acquired := tl.elapsed()
	tl.until(acquired + heldCheck(ttl))
	e.mustBeHeld(t, key, fmt.Sprintf("it was acquired with a ttl of %v only %v ago", ttl, heldCheck(ttl)))
	tl.until(lateCheck(ttl))
	probe := e.ownerElsewhere("probe")
	if _, ok := e.acquire(t, key, probe, holdTTL); ok {
		e.cleanupRelease(t, key, probe)
		if took := tl.elapsed(); took < ttl {
			t.Fatalf("Acquire of %s by a new owner returned acquired %v after the Acquire of its lock with a ttl of %v was sent: the store expired the lock early (a ttl rounded down to whole seconds, a clock read in whole seconds, or a ttl read in a smaller unit); the contract requires a lock to live for its whole ttl on the store's clock", show(key), took.Round(time.Millisecond), ttl)
		}
		// The probe reached the store after the ttl had passed, on a slow
		// store or a busy machine: nothing to conclude.
		e.mustRelease(t, key, probe, "it took the key")
	}
	tl.until(acquired + e.gone(ttl))
	_, token := e.mustBeFree(t, key, holdTTL, fmt.Sprintf("it was acquired with a ttl of %v, %v ago, and never renewed: expired means gone", ttl, e.gone(ttl)))
	if token <= first {
		t.Fatalf("taking over the expired lock on %s returned token %d, not greater than the expired holder's %d; the contract requires tokens that grow across expiries", show(key), token, first)
	}
}

func expiredLockOldOwner(t testing.TB, e *env) {
	ttl := e.opts.TTL
	key, a, b := e.key(), e.owner("A"), e.ownerElsewhere("B")
	e.mustAcquire(t, key, a, ttl, "no lock has ever held this key")
	tl := e.startTimeline()
	tl.until(e.gone(ttl))
	if e.renew(t, key, a, ttl) {
		t.Fatalf("Renew by the owner of an expired lock on %s returned true; the contract requires false: expired means gone, and a holder that paused past its ttl must learn it lost the lock", show(key))
	}
	if e.release(t, key, a) {
		t.Fatalf("Release by the owner of an expired lock on %s returned true; the contract requires false: expired means gone", show(key))
	}
	e.mustAcquire(t, key, b, holdTTL, "the previous lock expired")
	if e.renew(t, key, a, holdTTL) {
		t.Fatalf("Renew of %s by the owner of the expired lock returned true after another owner took the key over; the contract requires false: only the current holder may renew", show(key))
	}
	if e.release(t, key, a) {
		t.Fatalf("Release of %s by the owner of the expired lock returned true after another owner took the key over; the contract requires false: only the current holder may release", show(key))
	}
	e.mustBeHeld(t, key, "the new owner took it over and the old owner's calls were refused")
	e.mustRelease(t, key, b, "the new owner holds a live lock on it")
}

// tokensGrow interleaves two keys so that a token source shared between keys
// cannot hide a per-key regression, and crosses one expiry.
func tokensGrow(t testing.TB, e *env) {
	ttl := e.opts.TTL
	k1, k2 := e.key(), e.key()
	seen := map[string][]int64{}
	var steps []string
	take := func(key, owner string, ttl time.Duration, how string) {
		t.Helper()
		token := e.mustAcquire(t, key, owner, ttl, how)
		steps = append(steps, fmt.Sprintf("%s: %d", how, token))
		if token <= 0 {
			t.Fatalf("Acquire of %s returned token %d (%s); the contract requires a positive fencing token", show(key), token, how)
		}
		if prev := seen[key]; len(prev) > 0 && token <= prev[len(prev)-1] {
			t.Fatalf("tokens on %s went %v then %d (%s); the contract requires each token to be greater than every token the key had before, across releases and expiries", show(key), prev, token, how)
		}
		seen[key] = append(seen[key], token)
	}
	a, b, c, d := e.owner("A"), e.ownerElsewhere("B"), e.owner("C"), e.ownerElsewhere("D")

	take(k1, a, holdTTL, "first acquire of k1")
	take(k2, b, holdTTL, "first acquire of k2")
	e.mustRelease(t, k1, a, "A holds it")
	take(k1, c, holdTTL, "acquire of k1 after a release")
	e.mustRelease(t, k2, b, "B holds it")
	take(k2, b, ttl, "re-acquire of k2 by its former holder")
	e.mustRelease(t, k1, c, "C holds it")
	take(k1, a, ttl, "re-acquire of k1 by its first holder")
	tl := e.startTimeline()
	tl.until(e.gone(ttl))
	take(k1, d, holdTTL, "takeover of k1 after expiry")
	take(k2, c, holdTTL, "takeover of k2 after expiry")
	e.mustRelease(t, k1, d, "D holds it")
	take(k1, d, holdTTL, "re-acquire of k1 after the takeover")
	e.mustRelease(t, k1, d, "D holds it")
	e.mustRelease(t, k2, c, "C holds it")
}

func tokenFloorAfterReset(t testing.TB, e *env) {
	if e.opts.ResetTokens == nil {
		skip(t, e.name, "the store has no ResetTokens(ctx) error method and Options.ResetTokens is nil, so the per-key token floor cannot be checked",
			"give the store a ResetTokens(ctx context.Context) error method (see conformance.TokenResetter), or set Options.ResetTokens to a function, that sends the store's token source back (resets its sequence or counter, as a restore from an old backup would) and returns once the store draws from it")
	}
	held, released, owner := e.key(), e.key(), e.owner("A")
	var last int64
	for range 3 {
		last = e.mustAcquire(t, released, owner, holdTTL, "its holder released it")
		e.mustRelease(t, released, owner, "the owner holds it")
	}
	heldToken := e.mustAcquire(t, held, owner, holdTTL, "no lock has ever held this key")

	ctx, cancel := e.ctx()
	err := e.opts.ResetTokens(ctx)
	cancel()
	if errors.Is(err, core.ErrTokensNotResettable) {
		tokensGrowWithoutReset(t, e, released, last, held, owner, heldToken)
		return
	}
	if err != nil {
		failWith(t, "make Options.ResetTokens send the token source back and return nil once the store draws from it.", "Options.ResetTokens returned an error: %v", err)
	}

	b := e.ownerElsewhere("B")
	token := e.mustAcquire(t, released, b, holdTTL, "its holder released it")
	if token <= last {
		t.Fatalf("after ResetTokens, Acquire of %s, whose last token was %d, returned token %d; the contract requires a per-key floor: the next token of a key is at least its last token + 1, whatever happens to the token source", show(released), last, token)
	}
	e.mustRelease(t, held, owner, "the owner holds it; resetting the token source must not end a lock")
	token = e.mustAcquire(t, held, b, holdTTL, "its holder released it")
	if token <= heldToken {
		t.Fatalf("after ResetTokens, Acquire of %s, whose last token was %d, returned token %d; the contract requires a per-key floor: the next token of a key is at least its last token + 1", show(held), heldToken, token)
	}
	fresh := e.key()
	if token := e.mustAcquire(t, fresh, b, holdTTL, "no lock has ever held this key"); token <= 0 {
		t.Fatalf("after ResetTokens, Acquire of the new key %s returned token %d; the contract requires a positive fencing token", show(fresh), token)
	}
}

// tokensGrowWithoutReset is what token-floor-after-reset checks of a store
// whose token source cannot be sent back on its own (its ResetTokens
// returned core.ErrTokensNotResettable, as etcd's revision does): that a
// key's tokens grow across a release, an expiry, and 100 writes to other
// keys, which move a shared source such as a revision. released was last
// acquired with token last and is free; held is held by holder with token
// heldToken.
func tokensGrowWithoutReset(t testing.TB, e *env, released string, last int64, held, holder string, heldToken int64) {
	t.Helper()
	t.Logf("conformance: %s: the store's token source cannot be reset (core.ErrTokensNotResettable); checking that tokens grow across release, expiry and 100 writes instead", e.name)
	b := e.ownerElsewhere("B")
	e.mustRelease(t, held, holder, "the owner holds it")
	if token := e.mustAcquire(t, held, b, holdTTL, "its holder released it"); token <= heldToken {
		t.Fatalf("Acquire of %s, released by its holder whose token was %d, returned token %d; the contract requires tokens that grow across releases", show(held), heldToken, token)
	}
	ttl := e.steerTTL()
	expiring, c := e.key(), e.owner("C")
	before := e.mustAcquire(t, expiring, c, ttl, "no lock has ever held this key")
	tl := e.startTimeline()
	for range 100 {
		k, w := e.key(), e.owner("W")
		e.mustAcquire(t, k, w, holdTTL, "no lock has ever held this key")
		e.mustRelease(t, k, w, "the owner holds it")
	}
	tl.until(e.gone(ttl))
	if _, token := e.mustBeFree(t, expiring, holdTTL, fmt.Sprintf("it was acquired with a ttl of %v and never renewed", ttl)); token <= before {
		t.Fatalf("Acquire of %s, whose lock of token %d expired, returned token %d; the contract requires tokens that grow across expiries", show(expiring), before, token)
	}
	if token := e.mustAcquire(t, released, b, holdTTL, "its holder released it"); token <= last {
		t.Fatalf("after 100 writes to other keys, Acquire of %s, whose last token was %d, returned token %d; the contract requires tokens that grow", show(released), last, token)
	}
}

// fourWeeks is 2,419,200,000 ms, more than the 2^31-1 ms an int32 holds.
const fourWeeks = 28 * 24 * time.Hour

func ttlFourWeeks(t testing.TB, e *env) {
	// With AdvanceTime, move past the 2^31 ms (24.86 days) that a 32-bit
	// ttl could hold; in real time, wait a while.
	wait := e.opts.TTL / 2
	if e.opts.AdvanceTime != nil {
		wait = 26 * 24 * time.Hour
	}
	key, a := e.key(), e.owner("A")
	e.mustAcquire(t, key, a, fourWeeks, "no lock has ever held this key, and a ttl of four weeks is valid")
	tl := e.startTimeline()
	tl.until(wait)
	e.mustBeHeld(t, key, fmt.Sprintf("it was acquired %v ago with a ttl of four weeks (2,419,200,000 ms); a ttl must not be squeezed into 32 bits", wait))
	e.mustRenew(t, key, a, fourWeeks, fmt.Sprintf("the owner acquired it %v ago with a ttl of four weeks", wait))
	tl.until(2 * wait)
	e.mustBeHeld(t, key, fmt.Sprintf("it was renewed %v ago for four weeks; a four-week renewal must not become a short one", wait))
	e.mustRelease(t, key, a, "the owner renewed it for four weeks")
}

func cancelledContext(t testing.TB, e *env) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	free, held, a := e.key(), e.key(), e.owner("A")
	e.mustAcquire(t, held, a, holdTTL, "no lock has ever held this key")

	type call struct {
		name string
		do   func() (bool, error)
		why  string
	}
	calls := []call{
		{fmt.Sprintf("Acquire(%s) of a free key", show(free)), func() (bool, error) {
			_, ok, err := e.store.Acquire(cancelled, free, a, holdTTL)
			if ok && err == nil {
				e.cleanupRelease(t, free, a)
			}
			return ok, err
		}, "not acquired would tell the caller that a free key is taken"},
		{fmt.Sprintf("Acquire(%s) of a held key", show(held)), func() (bool, error) {
			_, ok, err := e.store.Acquire(cancelled, held, e.owner("B"), holdTTL)
			return ok, err
		}, "not acquired claims the store checked the key"},
		{fmt.Sprintf("Renew(%s) by its holder", show(held)), func() (bool, error) {
			return e.store.Renew(cancelled, held, a, holdTTL)
		}, "false would tell the holder it lost a lock it still holds"},
		{fmt.Sprintf("Release(%s) by its holder", show(held)), func() (bool, error) {
			return e.store.Release(cancelled, held, a)
		}, "false would tell the holder it did not hold the lock"},
	}
	for _, c := range calls {
		ok, err := c.do()
		switch {
		case err == nil && ok:
			t.Errorf("%s with a cancelled context returned (true, nil); the contract requires an error: a call whose context is cancelled cannot be made, so it must not report success", c.name)
		case err == nil:
			t.Errorf("%s with a cancelled context returned (false, nil); the contract requires an error: false means the store decided, and here %s", c.name, c.why)
		}
	}
}
