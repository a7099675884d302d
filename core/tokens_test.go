package core_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/leasehold/leasehold/core"
	"github.com/leasehold/leasehold/core/coretest"
)

func TestBrokenTokens(t *testing.T) {
	for _, c := range []struct {
		name string
		// token replaces the store's token of the second acquisition
		// (n is the first acquisition's token).
		token func(n int64) int64
		rule  string
	}{
		{"zero", func(int64) int64 { return 0 }, "positive"},
		{"negative", func(int64) int64 { return -5 }, "positive"},
		{"same as before", func(n int64) int64 { return n }, "greater"},
		{"smaller than before", func(n int64) int64 { return n - 1 }, "greater"},
	} {
		for _, via := range []string{"Acquire", "WithLock"} {
			t.Run(c.name+"/"+via, func(t *testing.T) {
				clock := core.NewManualClock(t0)
				store := core.NewMemoryStore(core.WithMemoryClock(clock))
				spy := newSpy(store, clock)
				locks := coretest.NewLocks(t, spy, core.WithClock(clock))

				var first *core.Lock
				for range 3 {
					first = mustAcquire(t, locks, "k")
					if err := first.Release(context.Background()); err != nil {
						t.Fatal(err)
					}
				}
				spy.tokenFn = func(string, int64) int64 { return c.token(first.Token()) }
				want := c.token(first.Token())

				var err error
				called := false
				if via == "Acquire" {
					var lk *core.Lock
					lk, err = locks.Acquire(context.Background(), "k")
					if lk != nil {
						t.Fatal("Acquire returned a lock")
					}
				} else {
					err = locks.WithLock(context.Background(), "k", func(context.Context) error { called = true; return nil })
				}
				if !errors.Is(err, core.ErrBrokenStore) || called {
					t.Fatalf("%s with token %d: %v (fn called: %v); want ErrBrokenStore", via, want, err, called)
				}
				var sce *core.StoreContractError
				if !errors.As(err, &sce) || sce.Key != "k" || sce.Token != want || !strings.Contains(sce.Rule, c.rule) {
					t.Fatalf("%s: %v; want a StoreContractError for k, token %d, naming the rule (%q)", via, err, want, c.rule)
				}
				// The lock the store granted was handed back.
				if h := holder(t, store, "k"); h != "" {
					t.Fatalf("the store still holds k for %s", h)
				}
				if n := clock.Pending(); n != 0 {
					t.Fatalf("%d timers: a refused lock is being renewed", n)
				}
				// A sound token is accepted again.
				spy.tokenFn = nil
				mustAcquire(t, locks, "k")
			})
		}
	}
}

// TestTokensGrowPerKey: the growing-token rule is per key.
func TestTokensGrowPerKey(t *testing.T) {
	clock := core.NewManualClock(t0)
	store := core.NewMemoryStore(core.WithMemoryClock(clock))
	spy := newSpy(store, clock)
	spy.tokenFn = func(key string, _ int64) int64 { return map[string]int64{"a": 10, "b": 3}[key] }
	locks := coretest.NewLocks(t, spy, core.WithClock(clock))
	if a := mustAcquire(t, locks, "a"); a.Token() != 10 {
		t.Fatalf("token %d", a.Token())
	}
	if b := mustAcquire(t, locks, "b"); b.Token() != 3 {
		t.Fatalf("token %d", b.Token())
	}
}

func TestOwnerIDs(t *testing.T) {
	clock := core.NewManualClock(t0)
	store := core.NewMemoryStore(core.WithMemoryClock(clock))
	a := coretest.NewLocks(t, store, core.WithClock(clock), core.WithInstanceName("web-1"))
	b := coretest.NewLocks(t, store, core.WithClock(clock), core.WithInstanceName("web-1")) // same name
	const n = 1000
	seen := map[string]bool{}
	var suffixes []string
	for i := range n {
		l := a
		if i%2 == 1 {
			l = b
		}
		lk := mustAcquire(t, l, fmt.Sprint("k", i))
		owner := lk.Owner()
		if seen[owner] {
			t.Fatalf("owner id %q given twice", owner)
		}
		seen[owner] = true
		suffix, ok := strings.CutPrefix(owner, "web-1/")
		if !ok {
			t.Fatalf("owner id %q does not start with the instance name", owner)
		}
		// At least 128 random bits: base32 digits, 5 bits each.
		if len(suffix)*5 < 128 || strings.Trim(suffix, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567") != "" {
			t.Fatalf("owner id suffix %q: want at least 128 bits of base32", suffix)
		}
		suffixes = append(suffixes, suffix)
	}
	// Every position varies: no counter, no clock, no fixed part.
	for pos := range len(suffixes[0]) {
		chars := map[byte]bool{}
		for _, s := range suffixes {
			chars[s[pos]] = true
		}
		if len(chars) < 20 {
			t.Fatalf("position %d of the owner ids takes %d values over %d ids", pos, len(chars), n)
		}
	}
}

func TestOwnerIDDefaultsToHostAndPID(t *testing.T) {
	host, _ := os.Hostname()
	clock := core.NewManualClock(t0)
	locks := coretest.NewLocks(t, core.NewMemoryStore(core.WithMemoryClock(clock)), core.WithClock(clock))
	lk := mustAcquire(t, locks, "k")
	if prefix := fmt.Sprintf("%s:%d/", host, os.Getpid()); !strings.HasPrefix(lk.Owner(), prefix) {
		t.Fatalf("owner %q, want the prefix %q", lk.Owner(), prefix)
	}
}

// TestLongInstanceName: an overlong instance name is cut, and the owner id
// stays valid UTF-8, since stores keep it in text columns.
func TestLongInstanceName(t *testing.T) {
	clock := core.NewManualClock(t0)
	for _, name := range []string{strings.Repeat("w", 300), strings.Repeat("é", 150), "w" + strings.Repeat("日", 100)} {
		locks := coretest.NewLocks(t, core.NewMemoryStore(core.WithMemoryClock(clock)), core.WithClock(clock), core.WithInstanceName(name))
		lk := mustAcquire(t, locks, "k", core.WithTTL(time.Second))
		owner := lk.Owner()
		instance := owner[:strings.LastIndexByte(owner, '/')]
		if len(instance) > 200 || !strings.HasPrefix(name, instance) || len(instance) < 197 {
			t.Fatalf("instance part %q (%d bytes) of a %d-byte name", instance, len(instance), len(name))
		}
		if !utf8.ValidString(owner) {
			t.Fatalf("owner id %q is not valid UTF-8", owner)
		}
	}
}
