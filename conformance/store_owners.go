package conformance

import (
	"fmt"
	"strings"
	"testing"
)

// ownerCases check that owners are compared exactly, byte for byte.
func ownerCases() []Case {
	return []Case{
		{
			Name:    "owner-exact",
			Catches: "a store that compares owners loosely (by prefix, ignoring case or trailing spaces, after Unicode normalisation, as a case-insensitive or PAD SPACE SQL collation does), so that one instance renews or frees the lock of another whose owner merely looks alike.",
			Fix:     "Compare the owner exactly, byte for byte: an equality on the whole value (in SQL, a binary collation such as COLLATE \"C\" or utf8mb4_bin and a VARBINARY or bytea column), never a prefix match or a collation that folds case, spaces or accents.",
			run:     ownerExact,
		},
	}
}

// ownerLookalikes returns owners that differ from owner but look alike:
// a prefix, an extension, another case, a trailing space, and the other
// Unicode normalisation of its last letter. owner ends in "é" (NFC).
func ownerLookalikes(owner string) map[string]string {
	nfd := strings.TrimSuffix(owner, "\u00e9") + "e\u0301"
	return map[string]string{
		"a prefix of the holder's owner":         strings.TrimSuffix(owner, "2\u00e9"),
		"the holder's owner extended":            owner + "3",
		"the holder's owner in upper case":       strings.ToUpper(owner),
		"the holder's owner with a space":        owner + " ",
		"the holder's owner in NFD (e + U+0301)": nfd,
	}
}

func ownerExact(t testing.TB, e *env) {
	// The holder's owner, "worker-…-12é", and the other way round: a holder
	// whose owner is the other's prefix, and one in NFD.
	base := e.owner("worker") + "-12\u00e9"
	holders := []string{base, strings.TrimSuffix(base, "2\u00e9"), strings.TrimSuffix(base, "\u00e9") + "e\u0301"}
	for _, holder := range holders {
		key := e.key()
		e.mustAcquire(t, key, holder, holdTTL, "no lock has ever held this key")
		others := ownerLookalikes(base)
		others["the owner of the first test"] = base
		for what, other := range others {
			if other == holder {
				continue
			}
			if e.renew(t, key, other, holdTTL) {
				proof(t, "Renew of %s by %q returned true, but the lock's owner is %q (%s); the contract requires owners to match exactly", show(key), other, holder, describeOther(what, other, holder))
			}
			if e.release(t, key, other) {
				proof(t, "Release of %s by %q returned true, but the lock's owner is %q (%s); the contract requires owners to match exactly", show(key), other, holder, describeOther(what, other, holder))
			}
		}
		e.mustRenew(t, key, holder, holdTTL, "it holds the lock, and lookalike owners may not have touched it")
		e.mustRelease(t, key, holder, "it holds the lock, and lookalike owners may not have freed it")
	}
}

func describeOther(what, other, holder string) string {
	return fmt.Sprintf("the caller's owner is %s; in code points %+q against %+q", what, other, holder)
}
