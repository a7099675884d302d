package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// keysThatNeedCare are keys that a naive mapping to Redis keys would merge
// or split across slots: braces (a hash tag of their own), the escape
// character and escapes, the prefix's separator and the floor's suffix,
// the longest key of 4-byte runes, and keys that differ only by case or a
// trailing space.
var keysThatNeedCare = []string{
	"{", "}", "{}", "}{", "{a}", "a{b}c", "{a}b", "%", "%7B", "%7b", "%25", "%%7D",
	":", "a:", ":floor", "a}:floor", "a:floor", "}:floor",
	strings.Repeat("\U0001F512", 500), strings.Repeat("{", 500),
	"Export", "export", "EXPORT", "export ", " export", "export\t",
}

// TestKeysOnCluster: every key above is its own lock on the Cluster, its
// two Redis keys share a slot (or the script would be refused), and locks
// spread over the masters.
func TestKeysOnCluster(t *testing.T) {
	url, prefix := servers[1].get(t)
	s := newStore(t, url, prefix)
	ctx := context.Background()
	for i, k := range keysThatNeedCare {
		mustAcquire(t, s, k, "owner-"+k, time.Minute)
		for _, other := range keysThatNeedCare[:i] {
			if ok, err := s.Renew(ctx, k, "owner-"+other, time.Minute); err != nil || ok {
				t.Errorf("Renew(%q) by the owner of %q = %v, %v; want false", k, other, ok, err)
			}
			if _, ok, err := s.Acquire(ctx, other, "owner-"+k, time.Minute); err != nil || ok {
				t.Errorf("Acquire(%q) while held, by the owner of %q = %v, %v; want false", other, k, ok, err)
			}
		}
	}
	for i, k := range keysThatNeedCare {
		mustRelease(t, s, k, "owner-"+k)
		for _, later := range keysThatNeedCare[i+1:] {
			if ok, err := s.Renew(ctx, later, "owner-"+later, time.Minute); err != nil || !ok {
				t.Fatalf("after the release of %q, Renew(%q) by its owner = %v, %v; want true", k, later, ok, err)
			}
		}
	}

	for i := range 20 {
		mustAcquire(t, s, fmt.Sprintf("spread-%d", i), "o", time.Minute)
	}
	holding := 0
	for addr, node := range newClient(t, url).Nodes() {
		var cursor uint64
		found := false
		for {
			e, err := node.Do(ctx, node.B().Scan().Cursor(cursor).Match(prefix+"*").Build()).AsScanEntry()
			if err != nil {
				t.Fatalf("SCAN on %s: %v", addr, err)
			}
			found = found || len(e.Elements) > 0
			if cursor = e.Cursor; cursor == 0 {
				break
			}
		}
		if found {
			holding++
		}
	}
	if holding < 2 {
		t.Errorf("the locks' keys are on %d node(s); want them spread over the masters", holding)
	}
}
