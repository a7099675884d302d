package conformance

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/leasehold/leasehold/core"
)

// listerCases is the "lister" group: the rules of core.Lister, an optional
// capability. They run on every store that implements it and are skipped,
// with the reason, on the others.
func listerCases() []Case {
	return []Case{
		{
			Name:    "list-by-prefix",
			Group:   "lister",
			Catches: "a List that misses a live lock, reports a released one, matches the prefix loosely (case folding, LIKE wildcards such as % and _, a prefix of the prefix), or returns keys out of byte order or with the wrong owner, token or time left.",
			Fix:     "Select the live locks (an owner, an expiry after the store's now) whose key starts with the prefix compared as bytes (key >= prefix and key < the prefix's successor, or a byte-wise LEFT(key, length) = prefix; never LIKE), ordered by the key's bytes.",
			run:     listByPrefix,
		},
		{
			Name:    "list-skips-expired",
			Group:   "lister",
			Catches: "a List that reports a lock whose ttl has passed on the store's clock.",
			Fix:     "Filter List on the store's clock, in the query itself: only the locks whose expiry is after the store's now.",
			Waits:   true,
			run:     listSkipsExpired,
		},
	}
}

// lister returns the store as a core.Lister, or skips the case.
func (e *env) lister(t testing.TB) core.Lister {
	t.Helper()
	l, ok := e.store.(core.Lister)
	if !ok {
		skip(t, e.name, "the store does not implement core.Lister (optional: the leasehold status command uses it), so its List cannot be checked",
			"give the store a List(ctx, prefix) method (see core.Lister)")
	}
	return l
}

// list calls List and fails the case if it returns an error.
func (e *env) list(t testing.TB, l core.Lister, prefix string) []core.LockInfo {
	t.Helper()
	ctx, cancel := e.ctx()
	defer cancel()
	var (
		got []core.LockInfo
		err error
	)
	e.timed(t, func() { got, err = l.List(ctx, prefix) })
	if err != nil {
		callFailed(t, fmt.Sprintf("List(%s)", show(prefix)), err)
	}
	return got
}

func listByPrefix(t testing.TB, e *env) {
	l := e.lister(t)
	base := e.key() + "/"
	// In byte order. "a%", "a_x" and "A" are the near misses of a LIKE
	// match or a case-folding one; "ab" is released before List.
	keys := []string{base + "A", base + "a", base + "a%", base + "a_x", base + "ab", base + "b"}
	owner := e.owner("A")
	tokens := map[string]int64{}
	for _, k := range keys {
		tokens[k] = e.mustAcquire(t, k, owner, holdTTL, "no lock has ever held this key")
	}
	e.mustRelease(t, base+"ab", owner, "the owner holds it")
	// Held elsewhere: a key that shares all but the last byte of the prefix.
	other := strings.TrimSuffix(base, "/") + "."
	e.mustAcquire(t, other+"a", owner, holdTTL, "no lock has ever held this key")

	check := func(prefix string, want ...string) {
		t.Helper()
		got := e.list(t, l, prefix)
		var gotKeys []string
		for _, li := range got {
			gotKeys = append(gotKeys, li.Key)
		}
		if !slices.Equal(gotKeys, want) {
			t.Fatalf("List(%s) returned keys %s; the contract requires exactly the live locks whose key starts with the prefix, byte for byte, in byte order: %s", show(prefix), showAll(gotKeys), showAll(want))
		}
		for _, li := range got {
			if li.Owner != owner || li.Token != tokens[li.Key] || li.ExpiresIn <= 0 || li.ExpiresIn > holdTTL {
				t.Fatalf("List(%s) reported %s with owner %q, token %d, %v left; want owner %q, token %d, and between 0 and %v left", show(prefix), show(li.Key), li.Owner, li.Token, li.ExpiresIn, owner, tokens[li.Key], holdTTL)
			}
		}
	}
	check(base+"a", base+"a", base+"a%", base+"a_x")
	check(base+"a%", base+"a%")
	check(base+"a_", base+"a_x")
	check(base+"A", base+"A")
	check(base, base+"A", base+"a", base+"a%", base+"a_x", base+"b")
}

func listSkipsExpired(t testing.TB, e *env) {
	l := e.lister(t)
	base := e.key() + "/"
	ttl := e.opts.TTL
	owner := e.owner("A")
	e.mustAcquire(t, base+"short", owner, ttl, "no lock has ever held this key")
	tl := e.startTimeline()
	e.mustAcquire(t, base+"long", owner, holdTTL, "no lock has ever held this key")
	tl.until(e.gone(ttl))
	got := e.list(t, l, base)
	if len(got) != 1 || got[0].Key != base+"long" {
		var keys []string
		for _, li := range got {
			keys = append(keys, li.Key)
		}
		t.Fatalf("List(%s) at %v after a lock of ttl %v was taken returned %s; the contract requires expired locks to be gone: want only %s", show(base), tl.elapsed(), ttl, showAll(keys), show(base+"long"))
	}
}

// showAll renders keys for a failure message.
func showAll(keys []string) string {
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = show(k)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}
