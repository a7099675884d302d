package rueidisstore

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/leasehold/leasehold/core"
)

// DefaultPrefix starts every Redis key a [Store] writes, unless
// [WithPrefix] says otherwise.
const DefaultPrefix = "leasehold:"

// floorSuffix ends the name of a lock's floor key; the lock key itself ends
// at the closing brace of its hash tag.
const floorSuffix = ":floor"

// Lock keys become Redis keys as prefix + "{" + escaped key + "}": the
// braces are a Redis Cluster hash tag, so that a lock's hash and its floor
// key share a slot and one script may touch both. The escape maps '%', '{'
// and '}' to "%25", "%7B" and "%7D" and leaves every other byte alone. So
// the tag holds no brace and ends where the key ends; the mapping is
// one-to-one, and byte-wise, so a key prefix maps to a prefix of the
// escaped key (List relies on that); and keys stay readable in redis-cli.
const escapeHex = "0123456789ABCDEF"

func needsEscape(c byte) bool { return c == '%' || c == '{' || c == '}' }

// writeEscaped writes the escaped form of key to b.
func writeEscaped(b *strings.Builder, key string) {
	for i := 0; i < len(key); i++ {
		if c := key[i]; needsEscape(c) {
			b.WriteByte('%')
			b.WriteByte(escapeHex[c>>4])
			b.WriteByte(escapeHex[c&15])
		} else {
			b.WriteByte(c)
		}
	}
}

func escape(key string) string {
	var b strings.Builder
	writeEscaped(&b, key)
	return b.String()
}

// unescape reverses writeEscaped. It refuses what writeEscaped never
// writes, so a foreign key under the prefix is not mistaken for a lock.
func unescape(s string) (string, bool) {
	if strings.IndexByte(s, '%') < 0 {
		return s, true
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			b.WriteByte(s[i])
			continue
		}
		if i+2 >= len(s) {
			return "", false
		}
		hi, lo := strings.IndexByte(escapeHex, s[i+1]), strings.IndexByte(escapeHex, s[i+2])
		if hi < 0 || lo < 0 || !needsEscape(byte(hi<<4|lo)) {
			return "", false
		}
		b.WriteByte(byte(hi<<4 | lo))
		i += 2
	}
	return b.String(), true
}

// lockArgs are the strings a script about one lock sends: the lock's two
// Redis keys (its hash, and its floor key) and, for acquire and renew, the
// lock's ttl and the floor's, in milliseconds ("0": no expiry).
type lockArgs struct {
	lock, floor   string
	ttl, floorTTL string
}

// args returns the lockArgs of key, with ttls if ttl is not 0. They are
// slices of one string, so that building them allocates once.
func (s *Store) args(key string, ttl time.Duration) lockArgs {
	var ms, floorMS int64
	n := len(s.prefix) + len(key) + 2 + len(floorSuffix)
	for i := 0; i < len(key); i++ {
		if needsEscape(key[i]) {
			n += 2
		}
	}
	if ttl != 0 {
		ms = ttl.Milliseconds()
		if s.retention != 0 {
			floorMS = ms + s.retention.Milliseconds()
		}
		n += 2 * 20
	}
	var b strings.Builder
	b.Grow(n)
	b.WriteString(s.prefix)
	b.WriteByte('{')
	writeEscaped(&b, key)
	b.WriteByte('}')
	lockEnd := b.Len()
	b.WriteString(floorSuffix)
	floorEnd := b.Len()
	if ttl != 0 {
		var num [20]byte
		b.Write(strconv.AppendInt(num[:0], ms, 10))
		ttlEnd := b.Len()
		b.Write(strconv.AppendInt(num[:0], floorMS, 10))
		all := b.String()
		return lockArgs{all[:lockEnd], all[:floorEnd], all[floorEnd:ttlEnd], all[ttlEnd:]}
	}
	all := b.String()
	return lockArgs{lock: all[:lockEnd], floor: all[:floorEnd]}
}

// lockKey returns the lock key a Redis key of this store's lock hashes
// names, and whether it is one.
func (s *Store) lockKey(name string) (string, bool) {
	rest, ok := strings.CutPrefix(name, s.prefix+"{")
	if !ok {
		return "", false
	}
	escaped, ok := strings.CutSuffix(rest, "}")
	if !ok || escaped == "" || strings.ContainsAny(escaped, "{}") {
		return "", false
	}
	return unescape(escaped)
}

// checkPrefix validates a key prefix: it must not be empty (the store's
// scans would then reach other applications' keys) and must hold no brace,
// which would move or break the hash tag.
func checkPrefix(p string) error {
	if p == "" {
		return fmt.Errorf("rueidisstore: empty key prefix: %w", core.ErrInvalidArgument)
	}
	if strings.ContainsAny(p, "{}") {
		return fmt.Errorf("rueidisstore: key prefix %q holds a brace, which would change the Redis Cluster hash tag: %w", p, core.ErrInvalidArgument)
	}
	return nil
}

// globEscape quotes the characters Redis's glob patterns (SCAN MATCH) treat
// as syntax.
func globEscape(s string) string {
	if !strings.ContainsAny(s, `*?[]\^`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if strings.IndexByte(`*?[]\^`, s[i]) >= 0 {
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// lockPattern is the SCAN MATCH pattern of the lock hashes whose key starts
// with keyPrefix. Lock hashes end with the tag's closing brace and floor keys
// do not, and an escaped key holds no brace, so "*}" matches only the rest
// of a lock hash's name.
func (s *Store) lockPattern(keyPrefix string) string {
	return globEscape(s.prefix) + "{" + globEscape(escape(keyPrefix)) + "*}"
}

// floorPattern is the SCAN MATCH pattern of every floor key of this store.
func (s *Store) floorPattern() string {
	return globEscape(s.prefix) + "{*}" + floorSuffix
}
