package conformance

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/leasehold/leasehold/core"
)

// batchCases is the "batch" group: the rules of core.BatchRenewer, an
// optional capability. They run on every store that implements it and are
// skipped, with the reason, on the others.
func batchCases() []Case {
	cases := []Case{
		{
			Name:    "batch-mixed-leases",
			Catches: "a RenewBatch whose answers are not each lease's own, in input order: one that renews a lease its owner no longer holds (expired, released, held by another owner) or never held, gives every lease the same ttl, renews from the old expiry, or answers in another order or with another count.",
			Waits:   true,
			Fix:     "Check and write each lease as Renew does (key, owner and a live lock matched, the expiry set to the store's now + that lease's own ttl), and answer from what the write matched, mapped back to each lease by its key and owner, in input order.",
			run:     batchMixedLeases,
		},
		{
			Name:    "batch-max-size",
			Catches: "a MaxBatch larger than the store can take in one call (a limit on parameters, statement or script size, or packet size), found with the longest keys.",
			Fix:     "State in MaxBatch what one call can carry with the longest keys and owners (send the leases as one parameter, a JSON array say, rather than three placeholders each), or split a call into several statements inside RenewBatch.",
			run:     batchMaxSize,
		},
		{
			Name:    "batch-cancelled-context",
			Catches: "a RenewBatch that answers a call whose context is cancelled (all false, say, which would lose every lock of the batch) instead of failing it.",
			Fix:     "Pass the context to the client and return its error when the call cannot complete; never answer false for a lease whose renewal was not decided.",
			run:     batchCancelledContext,
		},
		{
			Name:       "race-batch-takeover",
			Catches:    "a RenewBatch that checks the owners and then writes in a separate step, so that a batch whose leases expire in between extends the locks of the owners that took the keys over.",
			Concurrent: true,
			Waits:      true,
			Fix:        fixBatchInOneStep,
			run:        raceBatchTakeover,
		},
		{
			Name:    "steer-batch-takeover",
			Catches: "a RenewBatch that reads the owners in one round trip and extends the locks in another (a SELECT then an UPDATE by key, GETs then PEXPIREs), so that an old holder whose lock expires in between extends the lock of the owner that took the key over, whatever the speed of the server.",
			Fix:     fixBatchInOneStep,
			alone:   true,
			run:     steerTakeover("batch"),
		},
	}
	for i := range cases {
		cases[i].Group = "batch"
	}
	return cases
}

// fixBatchInOneStep is the fix of a batch that reads, then writes.
const fixBatchInOneStep = "Renew the leases of a batch in one statement or script that checks each lease's owner and liveness where it writes (UPDATE … FROM the batch WHERE owner matches AND the lock has not expired, RETURNING the rows renewed), or in a transaction that locks the rows it reads and writes only those."

// batcher returns the store as a core.BatchRenewer, or skips the case.
func (e *env) batcher(t testing.TB) core.BatchRenewer {
	t.Helper()
	b, ok := e.store.(core.BatchRenewer)
	if !ok {
		t.Skipf("the store does not implement core.BatchRenewer (optional: core.Locks then renews lease by lease), so its RenewBatch cannot be checked; add RenewBatch(ctx, leases) and MaxBatch() to run the %q group", "batch")
	}
	return b
}

// renewBatch calls RenewBatch and fails the case if it returns an error or
// the wrong number of answers.
func (e *env) renewBatch(t testing.TB, b core.BatchRenewer, leases []core.Lease) []bool {
	t.Helper()
	ctx, cancel := e.ctx()
	defer cancel()
	var (
		renewed []bool
		err     error
	)
	e.timed(t, func() { renewed, err = b.RenewBatch(ctx, leases) })
	if err != nil {
		callFailed(t, fmt.Sprintf("RenewBatch of %d leases", len(leases)), err)
	}
	if err := answerCount(len(leases), len(renewed)); err != nil {
		t.Fatal(err)
	}
	return renewed
}

// answerCount returns the contract's complaint about a RenewBatch of
// leases leases that returned answers answers, or nil if they match.
func answerCount(leases, answers int) error {
	if answers == leases {
		return nil
	}
	return fmt.Errorf("RenewBatch of %d leases returned %d answers; the contract requires one per lease, in input order", leases, answers)
}

// describeBatch lists leases with the answers got and wanted, for a
// failure message.
func describeBatch(leases []core.Lease, got, want []bool) string {
	var b strings.Builder
	for i, l := range leases {
		mark := ""
		if got[i] != want[i] {
			mark = "  <- wrong"
		}
		fmt.Fprintf(&b, "\n  %d: %s by %s for %v: %v, want %v%s", i, show(l.Key), l.Owner, l.TTL, got[i], want[i], mark)
	}
	return b.String()
}

// checkBatch fails the case unless got is want.
func checkBatch(t testing.TB, leases []core.Lease, got, want []bool, why string) {
	t.Helper()
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("RenewBatch answered a lease wrongly; the contract requires each lease's own answer, as Renew would give it, in input order (%s):%s", why, describeBatch(leases, got, want))
		}
	}
}

func batchMixedLeases(t testing.TB, e *env) {
	b := e.batcher(t)
	half := max((e.opts.TTL / 2).Truncate(time.Millisecond), time.Millisecond)
	me, other := e.owner("me"), e.owner("other")
	base := e.key() + "/"
	k := func(name string) string { return base + name }
	e.mustAcquire(t, k("expired"), me, half, "no lock has ever held this key")
	for _, name := range []string{"short", "long", "released", "twice"} {
		e.mustAcquire(t, k(name), me, holdTTL, "no lock has ever held this key")
	}
	e.mustAcquire(t, k("foreign"), other, holdTTL, "no lock has ever held this key")
	e.mustRelease(t, k("released"), me, "the owner has just acquired it")
	// "expired" has expired, as late as the store declares it may free a
	// lock (the check that it is gone waits, nothing held is checked).
	tl := e.startTimeline()
	tl.until(half + e.opts.TTL/6 + e.lateness(half))

	leases := []core.Lease{
		{Key: k("foreign"), Owner: me, TTL: holdTTL},    // another owner holds it
		{Key: k("short"), Owner: me, TTL: half},         // renewed, for a short while
		{Key: k("expired"), Owner: me, TTL: holdTTL},    // expired
		{Key: k("long"), Owner: me, TTL: holdTTL},       // renewed
		{Key: k("never"), Owner: me, TTL: holdTTL},      // never held
		{Key: k("foreign"), Owner: other, TTL: holdTTL}, // the same key, by its holder
		{Key: k("released"), Owner: me, TTL: holdTTL},   // released
		{Key: k("twice"), Owner: me, TTL: holdTTL},      // renewed
		{Key: k("twice"), Owner: me, TTL: holdTTL},      // the same lease again
		{Key: k("long"), Owner: other, TTL: holdTTL},    // not its holder
	}
	want := []bool{false, true, false, true, false, true, false, true, true, false}
	checkBatch(t, leases, e.renewBatch(t, b, leases), want, "leases held, expired, released, never held and held by another owner, with a key twice")

	// Nothing refused changed.
	e.mustBeFree(t, k("expired"), holdTTL, "its lock expired before the batch, which must not have revived it")
	e.mustBeFree(t, k("released"), holdTTL, "its owner released it before the batch, which must not have revived it")
	e.mustBeFree(t, k("never"), holdTTL, "no lock ever held it, and a batch must not create one")
	e.mustRenew(t, k("foreign"), other, holdTTL, "it holds the key; the batch renewed it for its holder")

	// Each lease got its own ttl, from the moment the batch ran: "short"
	// is gone (as late as the store declares), the others, renewed for
	// holdTTL, are held.
	tl = e.startTimeline()
	tl.until(half + e.opts.TTL/6 + e.lateness(half))
	e.mustBeFree(t, k("short"), holdTTL, fmt.Sprintf("the batch renewed it for %v, %v ago, with other leases renewed for %v: each lease expires ttl after the batch ran, by its own ttl", half, tl.elapsed(), holdTTL))
	e.mustBeHeld(t, k("long"), fmt.Sprintf("the batch renewed it for %v, %v ago", holdTTL, tl.elapsed()))
	e.mustBeHeld(t, k("twice"), fmt.Sprintf("the batch renewed it for %v, %v ago", holdTTL, tl.elapsed()))
}

// maxCheckedBatch bounds the batch that batch-max-size sends, for a store
// that states a huge MaxBatch.
const maxCheckedBatch = 10000

func batchMaxSize(t testing.TB, e *env) {
	b := e.batcher(t)
	n := b.MaxBatch()
	if n < 1 {
		t.Fatalf("MaxBatch() returned %d; the contract requires at least 1", n)
	}
	if n > maxCheckedBatch {
		t.Logf("MaxBatch() is %d; the case sends %d leases", n, maxCheckedBatch)
		n = maxCheckedBatch
	}
	// Keys of MaxKeyLength characters of 4 bytes each (after the case's
	// prefix), so that the batch is as large in bytes as keys allow.
	base := e.key() + "/"
	key := func(i int) string {
		head := fmt.Sprintf("%s%06d/", base, i)
		return head + strings.Repeat("😀", core.MaxKeyLength-utf8.RuneCountInString(head))
	}
	me := e.owner("me")
	leases := make([]core.Lease, n)
	want := make([]bool, n)
	for i := range leases {
		leases[i] = core.Lease{Key: key(i), Owner: me, TTL: holdTTL}
		// Every hundredth lease, and the last, is held; the others never were.
		if want[i] = i%100 == 0 || i == n-1; want[i] {
			e.mustAcquire(t, leases[i].Key, me, holdTTL, "no lock has ever held this key")
		}
	}
	what := fmt.Sprintf("a batch of MaxBatch (%d) leases with keys of %d characters", n, core.MaxKeyLength)
	ctx, cancel := e.ctx()
	defer cancel()
	var (
		renewed []bool
		err     error
	)
	// Timed: a call that ran out of Options.Timeout on a loaded machine
	// (bun's PostgreSQL store did, once, under CI's load: 10 s where it
	// takes 0.2 s) is reason to run the case again, not proof of the size.
	e.timed(t, func() { renewed, err = b.RenewBatch(ctx, leases) })
	if err != nil {
		// Not callFailed: an error here is most likely the size itself.
		t.Fatalf("RenewBatch of %s returned an error: %v; the contract requires a store to take MaxBatch leases in one call", what, err)
	}
	if err := answerCount(n, len(renewed)); err != nil {
		t.Fatal(err)
	}
	checkBatch(t, leases, renewed, want, what)
}

func batchCancelledContext(t testing.TB, e *env) {
	b := e.batcher(t)
	key, owner := e.key(), e.owner("A")
	e.mustAcquire(t, key, owner, holdTTL, "no lock has ever held this key")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	renewed, err := b.RenewBatch(ctx, []core.Lease{{Key: key, Owner: owner, TTL: holdTTL}})
	if err == nil {
		t.Fatalf("RenewBatch with a cancelled context answered %v and no error; the contract requires an error: a batch that could not reach a decision fails, and false would lose a lock its holder still has", renewed)
	}
	e.mustRenew(t, key, owner, holdTTL, "it holds the key: the batch that failed did not change that")
}

// raceBatchTakeover lets many locks expire while their holder renews them
// in batches and new owners take the keys over, all at once, so that the
// batches straddle the expiries. A correct store decides each lease of a
// batch atomically: renewed only if that took effect before the expiry,
// and then the takeover fails. The case's history check judges every
// answer, each lease of a batch being a renewal of its own; afterwards
// every new owner that won must still hold its key.
func raceBatchTakeover(t testing.TB, e *env) {
	b := e.batcher(t)
	ttl := max((e.opts.TTL / 5).Truncate(time.Millisecond), 6*time.Millisecond)
	n := e.opts.Callers
	batches := min(4, n)
	for range 2 {
		// The new owners call through the racing callers' stores, as
		// other instances would.
		keys, olds, news := make([]string, n), e.owners("old", n), e.racers("new", n, 0)
		for i := range keys {
			keys[i] = e.key()
			e.mustAcquire(t, keys[i], olds[i], ttl, "no lock has ever held this key")
			e.cleanupRelease(t, keys[i], news[i])
		}
		// A key of another owner, in every batch: never renewed by it.
		foreign, holder := e.key(), e.owner("holder")
		e.mustAcquire(t, foreign, holder, holdTTL, "no lock has ever held this key")
		r := e.startExpiryRace(ttl, n)
		answers, errs, took := make([][]bool, batches), make([]error, batches), make([]time.Duration, batches)
		batchLeases := make([][]core.Lease, batches)
		for j := range batches {
			for i := j * n / batches; i < (j+1)*n/batches; i++ {
				batchLeases[j] = append(batchLeases[j], core.Lease{Key: keys[i], Owner: olds[i], TTL: holdTTL})
			}
			batchLeases[j] = append(batchLeases[j], core.Lease{Key: foreign, Owner: olds[j*n/batches], TTL: holdTTL})
		}
		taken := make([]result, n)
		race(batches+n+1, func(j int) {
			switch {
			case j == batches+n:
				r.expire()
			case j < batches:
				r.waitFor(j * n / batches)
				ctx, cancel := e.ctx()
				defer cancel()
				start := time.Now()
				answers[j], errs[j] = b.RenewBatch(ctx, batchLeases[j])
				took[j] = time.Since(start)
			default:
				taken[j-batches] = r.takeover(j-batches, keys[j-batches], news[j-batches])
			}
		})
		for j, err := range errs {
			if err != nil {
				callFailedAfter(t, fmt.Sprintf("RenewBatch of %d leases around their expiry, concurrent with takeovers", len(batchLeases[j])), err, took[j])
			}
			if err := answerCount(len(batchLeases[j]), len(answers[j])); err != nil {
				t.Fatal(err)
			}
			for i, l := range batchLeases[j] {
				if answers[j][i] {
					e.cleanupRelease(t, l.Key, l.Owner)
				}
			}
			if last := len(answers[j]) - 1; answers[j][last] {
				t.Fatalf("RenewBatch renewed %s for %s, which never held it (%s does); the contract requires false: only the owner of a live lock may renew it", show(foreign), batchLeases[j][last].Owner, holder)
			}
		}
		e.winners(t, taken, "takeovers around the old locks' expiry")
		for i, r := range taken {
			if r.ok {
				// A batch renewal and the takeover both succeeding is left
				// to the history check, which names the calls.
				e.mustRenew(t, keys[i], news[i], holdTTL, "it took the key over, and no one else may have touched its lock since")
			}
		}
		e.mustRenew(t, foreign, holder, holdTTL, "it holds the key, which the batches could not renew for others")
	}
}
