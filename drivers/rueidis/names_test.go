package rueidisstore

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// hashTag returns the part of a Redis key that Redis Cluster hashes: the
// text between the first '{' and the next '}', if it is not empty, else the
// whole key.
func hashTag(name string) string {
	open := strings.IndexByte(name, '{')
	if open < 0 {
		return name
	}
	end := strings.IndexByte(name[open+1:], '}')
	if end <= 0 {
		return name
	}
	return name[open+1 : open+1+end]
}

func testStore(t *testing.T, prefix string) *Store {
	t.Helper()
	if err := checkPrefix(prefix); err != nil {
		t.Fatal(err)
	}
	return &Store{prefix: prefix}
}

var awkwardKeys = []string{
	"a", "A", "a ", "a:", ":a", "{", "}", "{}", "}{", "{a}", "a{b}c", "%", "%7B", "%7b", "%25", "%%7D",
	"lock{", "lock:floor", "x}:floor", "é", "e\u0301", "*", "?", "[a]", `\`, "\n",
	strings.Repeat("\U0001F512", 500), strings.Repeat("{", 500), strings.Repeat("}", 500),
}

// TestNamesOneSlotPerLock: both Redis keys of a lock hash on the escaped
// key, which holds no brace, so they share a slot; distinct keys give
// distinct names; and the lock key comes back from its name.
func TestNamesOneSlotPerLock(t *testing.T) {
	for _, prefix := range []string{DefaultPrefix, "app:", "a*b?[c]\\", ":floor"} {
		s := testStore(t, prefix)
		seen := map[string]string{}
		for _, key := range awkwardKeys {
			a := s.args(key, 0)
			lock, floor := a.lock, a.floor
			if !strings.HasPrefix(lock, prefix+"{") || floor != lock+floorSuffix {
				t.Fatalf("prefix %q, key %q: names %q, %q", prefix, key, lock, floor)
			}
			tag := hashTag(lock)
			if tag != hashTag(floor) || strings.ContainsAny(tag, "{}") || tag == "" || tag != lock[len(prefix)+1:len(lock)-1] {
				t.Errorf("prefix %q, key %q: hash tags %q and %q; want the escaped key, the same for both", prefix, key, tag, hashTag(floor))
			}
			for _, n := range []string{lock, floor} {
				if other, dup := seen[n]; dup {
					t.Errorf("prefix %q: keys %q and %q share the Redis key %q", prefix, other, key, n)
				}
				seen[n] = key
			}
			if back, ok := s.lockKey(lock); !ok || back != key {
				t.Errorf("prefix %q: lockKey(%q) = %q, %v; want %q", prefix, lock, back, ok, key)
			}
			if _, ok := s.lockKey(floor); ok {
				t.Errorf("prefix %q: lockKey takes the floor key %q for a lock", prefix, floor)
			}
		}
	}
}

func TestArgsAllocateOnce(t *testing.T) {
	s := testStore(t, DefaultPrefix)
	s.retention = DefaultFloorRetention
	want := lockArgs{"leasehold:{jobs/%7Bexport%7D}", "leasehold:{jobs/%7Bexport%7D}:floor", "30000", "86430000"}
	if a := s.args("jobs/{export}", 30*time.Second); a != want {
		t.Errorf("args = %q, want %q", a, want)
	}
	s.retention = 0
	if a := s.args("k", time.Second); a.ttl != "1000" || a.floorTTL != "0" {
		t.Errorf("args without retention: ttls %q, %q; want 1000 and 0 (no expiry)", a.ttl, a.floorTTL)
	}
	if n := testing.AllocsPerRun(100, func() { s.args("jobs/{export}", 30*time.Second) }); n != 1 {
		t.Errorf("args allocates %v times, want 1", n)
	}
}

func TestLockKeyRefusesForeignNames(t *testing.T) {
	s := testStore(t, "p:")
	for _, name := range []string{"p:", "p:{}", "p:{a", "p:{a}b", "p:{a{b}", "q:{a}", "p:{%}", "p:{%4}", "p:{%41}", "p:{%zz}", "p:{a}:floor"} {
		if key, ok := s.lockKey(name); ok {
			t.Errorf("lockKey(%q) = %q, true; want false", name, key)
		}
	}
}

func TestCheckPrefix(t *testing.T) {
	for _, p := range []string{"", "{", "a}", "x{y}"} {
		if checkPrefix(p) == nil {
			t.Errorf("checkPrefix(%q) = nil, want an error", p)
		}
	}
}

// globMatch is Redis's glob matching (stringmatchlen) for the syntax the
// store's patterns use: '*', and '\' quoting the next character.
func globMatch(pattern, s string) bool {
	if pattern == "" {
		return s == ""
	}
	switch pattern[0] {
	case '*':
		for i := 0; i <= len(s); i++ {
			if globMatch(pattern[1:], s[i:]) {
				return true
			}
		}
		return false
	case '\\':
		if len(pattern) > 1 {
			pattern = pattern[1:]
		}
	case '?', '[':
		panic("the store's patterns quote ? and [")
	}
	return s != "" && s[0] == pattern[0] && globMatch(pattern[1:], s[1:])
}

// TestPatterns: a key prefix's pattern matches the lock hash of every key
// that starts with it, and nothing else: no floor key, no other key.
func TestPatterns(t *testing.T) {
	for _, prefix := range []string{DefaultPrefix, "a*b?[c]\\"} {
		s := testStore(t, prefix)
		for _, keyPrefix := range append([]string{""}, awkwardKeys...) {
			pattern := s.lockPattern(keyPrefix)
			for _, key := range awkwardKeys {
				a := s.args(key, 0)
				lock, floor := a.lock, a.floor
				if got, want := globMatch(pattern, lock), strings.HasPrefix(key, keyPrefix); got != want {
					t.Errorf("prefix %q: pattern %q of key prefix %q matches %q: %v, want %v", prefix, pattern, keyPrefix, lock, got, want)
				}
				if globMatch(pattern, floor) {
					t.Errorf("prefix %q: pattern %q matches the floor key %q", prefix, pattern, floor)
				}
				if !globMatch(s.floorPattern(), floor) || globMatch(s.floorPattern(), lock) {
					t.Errorf("prefix %q: floor pattern %q: floor %q, lock %q", prefix, s.floorPattern(), floor, lock)
				}
			}
		}
	}
}

func TestUnescapeRoundTrip(t *testing.T) {
	for _, key := range awkwardKeys {
		got, ok := unescape(escape(key))
		if !ok || got != key || !utf8.ValidString(got) {
			t.Errorf("unescape(escape(%q)) = %q, %v", key, got, ok)
		}
	}
}
