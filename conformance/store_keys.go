package conformance

import (
	"crypto/rand"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/leasehold/leasehold/core"
)

// keyCases check the "exact keys" rule: any valid key is its own lock,
// compared byte for byte.
func keyCases() []Case {
	return []Case{
		{
			Name:    "keys-max-length",
			Catches: fmt.Sprintf("a store that rejects, truncates or mangles keys of %d characters, including ones whose characters take up to 4 bytes each (a column sized in bytes, or a 3-byte UTF-8 encoding).", core.MaxKeyLength),
			Fix:     "Store keys in a column that holds 500 characters of 4 bytes each (2,000 bytes), as bytes or utf8mb4, and never truncate them.",
			run:     keysMaxLength,
		},
		{
			Name:    "keys-unicode",
			Catches: "a store that mangles non-ASCII keys (a Latin-1 or 3-byte UTF-8 column, a lossy encoding), so that different CJK, emoji or right-to-left keys collide.",
			Fix:     "Store keys as bytes (bytea, VARBINARY, BLOB) or in full UTF-8 (utf8mb4, not utf8mb3 or Latin-1), and pass them to the store unchanged.",
			run:     keysUnicode,
		},
		{
			Name:    "keys-case",
			Catches: "a store that folds case (a case-insensitive collation), so that \"a\" and \"A\" are one lock.",
			Fix:     "Store keys as bytes, or under a binary collation (utf8mb4_bin, COLLATE \"C\"), so that they compare byte for byte.",
			run:     keysCase,
		},
		{
			Name:    "keys-trailing-space",
			Catches: "a store that ignores trailing spaces (a PAD SPACE collation or a CHAR column), so that \"a\" and \"a \" are one lock.",
			Fix:     "Store keys as bytes in a variable-length column (VARBINARY, bytea), not CHAR and not under a PAD SPACE collation.",
			run:     keysTrailingSpace,
		},
		{
			Name:    "keys-normalisation",
			Catches: "a store that normalises Unicode or ignores accents and combining marks, so that \"é\" (U+00E9) and \"e\" + U+0301 are one lock.",
			Fix:     "Store keys as bytes, or under a binary collation, and never normalise or fold them before they reach the store.",
			run:     keysNormalisation,
		},
		{
			Name:    "owners-max-length",
			Catches: "a store that truncates owner ids of 227 bytes (a column sized for a UUID, or in characters of 3 bytes), so that two owners of one instance, whose ids share all but their last 26 characters, are one owner and renew or release each other's locks.",
			Fix:     "Store owners in full and compare them byte for byte: a column of at least 255 bytes (VARBINARY(255), bytea, text), never a UUID or CHAR(36) column.",
			run:     ownersMaxLength,
		},
		{
			Name:    "keys-special-characters",
			Catches: "a store that treats quotes, backslashes, %, _, *, ?, [], :, {} or newlines in a key as syntax, such as a LIKE or glob pattern that makes one key match others.",
			Fix:     "Compare keys with = and pass them as bound parameters; never LIKE, GLOB or another pattern, and never formatted into the query text.",
			run:     keysSpecialCharacters,
		},
	}
}

// distinctKeys acquires every key for its own owner, in order, and requires
// every acquisition to succeed and every lock to stay its owner's: renewals
// by the owner succeed, renewals and releases by the owner of another key
// fail, and each release frees only its own key. why says what the keys have
// in common.
func distinctKeys(t testing.TB, e *env, keys []string, why string) {
	t.Helper()
	for i, k := range keys {
		if err := core.ValidateKey(k); err != nil {
			failWith(t, fixKitBug, "key %d is not valid: %v", i, err)
		}
	}
	owners := e.owners("K", len(keys))
	for i, k := range keys {
		if _, ok := e.acquire(t, k, owners[i], holdTTL); !ok {
			held := make([]string, 0, i)
			for _, h := range keys[:i] {
				held = append(held, show(h))
			}
			t.Fatalf("Acquire of %s returned not acquired, while only these other keys were held: %s; the contract requires exact keys, compared byte for byte (%s): a store that folds two keys together makes them one lock held by two unrelated jobs", show(k), strings.Join(held, ", "), why)
		}
		e.cleanupRelease(t, k, owners[i])
	}
	// other returns an owner that holds a different key than keys[i], and
	// that key, or a fresh owner when there is only one key.
	other := func(i int) (string, string) {
		if len(keys) == 1 {
			return e.owner("stranger"), "no key"
		}
		j := (i + 1) % len(keys)
		return owners[j], show(keys[j])
	}
	for i, k := range keys {
		stranger, theirs := other(i)
		if e.renew(t, k, stranger, holdTTL) {
			t.Fatalf("Renew of %s by the owner of %s returned true; the contract requires false: keys are exact (%s), so that owner does not hold this key", show(k), theirs, why)
		}
		e.mustRenew(t, k, owners[i], holdTTL, "its owner acquired it and no call on another key may change that")
	}
	for i, k := range keys {
		stranger, theirs := other(i)
		if e.release(t, k, stranger) {
			t.Fatalf("Release of %s by the owner of %s returned true; the contract requires false: keys are exact (%s), so that owner does not hold this key", show(k), theirs, why)
		}
		e.mustRelease(t, k, owners[i], "its owner acquired it and no call on another key may change that")
		for _, later := range keys[i+1:] {
			e.mustBeHeld(t, later, fmt.Sprintf("only %s was released; keys are exact (%s)", show(k), why))
		}
	}
}

// padTo returns base followed by filler runes up to exactly n runes, with
// last as the final rune.
func padTo(t testing.TB, base string, n int, filler, last rune) string {
	t.Helper()
	have := utf8.RuneCountInString(base)
	if have+1 > n {
		failWith(t, fmt.Sprintf("shorten Options.KeyPrefix (at most %d characters).", maxPrefix), "conformance: key prefix %q is too long for a %d-character key", base, n)
	}
	return base + strings.Repeat(string(filler), n-have-1) + string(last)
}

func keysMaxLength(t testing.TB, e *env) {
	n := core.MaxKeyLength
	for _, f := range []struct {
		name           string
		filler, l1, l2 rune
	}{
		{"ASCII", 'x', 'y', 'z'},
		{"CJK, 3 bytes each", '鍵', '錠', '鎖'},
		{"emoji, 4 bytes each", '🔒', '🔑', '🔐'},
	} {
		base := e.key() + ":"
		k1, k2 := padTo(t, base, n, f.filler, f.l1), padTo(t, base, n, f.filler, f.l2)
		distinctKeys(t, e, []string{k1, k2}, fmt.Sprintf("two %d-character keys (%s) that differ only in their last character", n, f.name))
	}
	mixed := padTo(t, e.key()+":a鍵🔒e\u0301", n, 'é', 'Z')
	distinctKeys(t, e, []string{mixed}, fmt.Sprintf("a %d-character key mixing ASCII, CJK, emoji and combining marks", n))
}

func keysUnicode(t testing.TB, e *env) {
	base := e.key() + ":"
	var keys []string
	for _, s := range []string{
		"锁", "鎖", "鍵", // CJK
		"🔒", "🔑", "👩‍💻", "👨‍💻", "🏳️‍🌈", // emoji, including ZWJ sequences
		"قفل", "מנעול", // right to left
		"замок", "κλειδί", "ล็อก", "ताला",
		"\u200b", "\ufeff", "\U0010fffd", // invisible, BOM, last plane
	} {
		keys = append(keys, base+s)
	}
	distinctKeys(t, e, keys, "different Unicode keys")
}

func keysCase(t testing.TB, e *env) {
	base := e.key() + ":"
	distinctKeys(t, e, []string{base + "a", base + "A", base + "lock", base + "Lock", base + "LOCK"}, "keys that differ only in case")
}

func keysTrailingSpace(t testing.TB, e *env) {
	base := e.key() + ":"
	distinctKeys(t, e, []string{base + "a", base + "a ", base + "a  ", base + " a"}, "keys that differ only in leading or trailing spaces")
}

func keysNormalisation(t testing.TB, e *env) {
	base := e.key() + ":"
	distinctKeys(t, e, []string{
		base + "\u00e9",  // é, NFC
		base + "e\u0301", // é, NFD
		base + "e",       // no accent
		base + "\u00c5",  // Å, NFC
		base + "A\u030a", // Å, NFD
		base + "\u212b",  // Å, ANGSTROM SIGN
		base + "A",
		base + "\ufb01", // ﬁ ligature
		base + "fi",
	}, "keys that are the same text under Unicode normalisation, or differ only in accents")
}

func keysSpecialCharacters(t testing.TB, e *env) {
	base := e.key() + ":"
	// Plain keys first: a store that matches a later key as a pattern then
	// finds them held.
	keys := []string{
		base + "abc", base + "a_c", base + "a%", base + "100%",
		base + "a*c", base + "a?c", base + "a[b]c", base + "a1c",
		base + `'`, base + `''`, base + `"`, base + "`", base + `\`, base + `\\`, base + `\_`, base + `\%`,
		base + "x:y", base + "x", base + "{x}", base + "{x}:y", base + "{}",
		base + "'; DROP TABLE locks; --", base + "line\nbreak", base + "tab\there", base + "$1", base + "?",
	}
	distinctKeys(t, e, keys, "keys holding quotes, backslashes, pattern characters or separators")
}

// ownersMaxLength takes a lock for an owner id as long as core makes them
// (an instance name of 200 bytes, here of 2-byte characters, a slash and 26
// random characters) and checks that another owner of the same instance,
// whose id differs in the last 26 characters only, is a stranger to it.
func ownersMaxLength(t testing.TB, e *env) {
	instance := strings.Repeat("\u00e9", 100) // 200 bytes
	a, b := instance+"/"+rand.Text(), instance+"/"+rand.Text()
	if len(a) != 227 || len(b) != 227 {
		failWith(t, fixKitBug, "owner ids of %d and %d bytes, want 227", len(a), len(b))
	}
	key := e.key()
	e.mustAcquire(t, key, a, holdTTL, "no lock has ever held this key")
	what := "another owner of the same instance, whose id differs in its last 26 characters"
	if _, ok := e.acquire(t, key, b, holdTTL); ok {
		e.cleanupRelease(t, key, b)
		t.Fatalf("Acquire of %s by %s returned acquired while the first owner held it; the contract requires not acquired: owner ids of up to 227 bytes are kept and compared in full", show(key), what)
	}
	if e.renew(t, key, b, holdTTL) {
		t.Fatalf("Renew of %s by %s returned true; the contract requires false: owner ids of up to 227 bytes are kept and compared in full, and only the holder may renew", show(key), what)
	}
	if e.release(t, key, b) {
		t.Fatalf("Release of %s by %s returned true; the contract requires false: owner ids of up to 227 bytes are kept and compared in full, and only the holder may release", show(key), what)
	}
	e.mustRenew(t, key, a, holdTTL, "it holds the lock, under its full owner id")
	e.mustRelease(t, key, a, "it holds the lock, under its full owner id")
	e.mustAcquire(t, key, b, holdTTL, "its holder released it")
	e.mustRelease(t, key, b, "it holds the lock, under its full owner id")
}
