package conformance_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/leasehold/leasehold/conformance"
	"github.com/leasehold/leasehold/core"
)

// TestMemoryStore runs the whole kit through Run against core.MemoryStore on
// a manual clock: the kit moves the clock and never sleeps.
func TestMemoryStore(t *testing.T) {
	clock := core.NewManualClock(time.Unix(1_700_000_000, 0))
	store := core.NewMemoryStore(core.WithMemoryClock(clock))
	conformance.Run(t, func(testing.TB) core.LockStore { return store }, conformance.Options{
		AdvanceTime: clock.Advance,
		ResetTokens: store.ResetTokens,
	})
	noLocksLeft(t, store)
}

// noLocksLeft checks that the kit handed back every lock it took: the store
// cases release theirs, and the instance cases close their instances, which
// hands back leases, run locks and leaderships. The one exception is by
// design: Close leaves a job lease whose run started less than a second
// before in the store for the rest of that second.
func noLocksLeft(t *testing.T, store *core.MemoryStore) {
	t.Helper()
	live, err := store.List(context.Background(), conformance.DefaultPrefix)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range live {
		if strings.HasSuffix(l.Key, ":owner") && l.ExpiresIn <= time.Second {
			continue
		}
		t.Errorf("the kit left a live lock on %q (owner %q, expires in %v)", l.Key, l.Owner, l.ExpiresIn)
	}
}

// TestMemoryStoreRealTime runs the whole kit through Run against
// core.MemoryStore on the system clock: the expiry cases wait in real time,
// in parallel, while ResetTokens resets the shared store under them; the
// instance cases move their instances' clocks with real time.
func TestMemoryStoreRealTime(t *testing.T) {
	store := core.NewMemoryStore()
	start := time.Now()
	t.Cleanup(func() {
		// The waiting cases run in parallel: the kit should take about the
		// longest of them (renew-then-expire's TTL/2 + TTL + TTL/6), not the
		// sum of them.
		t.Logf("the kit took %v in real time", time.Since(start).Round(time.Millisecond))
	})
	conformance.Run(t, func(testing.TB) core.LockStore { return store }, conformance.Options{
		TTL:         time.Second,
		ResetTokens: store.ResetTokens,
	})
	noLocksLeft(t, store)
}

// TestMemoryStoreOnePerCase gives every case a memory store of its own,
// as a driver that opens a database per test would, and every call of
// newStore for the case a new store value over it, as a driver that opens
// a new client each time would. Options.ResetTokens is nil, so the floor
// case finds the store's own ResetTokens method: nothing skips. newStore
// is called again for each racing caller and each instance.
func TestMemoryStoreOnePerCase(t *testing.T) {
	clock := core.NewManualClock(time.Unix(1_700_000_000, 0))
	const callers = 4
	var (
		mu      sync.Mutex
		skipped = map[string]bool{}
		data    = map[string]*core.MemoryStore{} // by case
		opened  = map[string]int{}               // newStore calls by case
		used    = map[string]map[*client]bool{}  // by case: the store values that took an Acquire
	)
	t.Run("kit", func(t *testing.T) {
		conformance.Run(t, func(t testing.TB) core.LockStore {
			mu.Lock()
			defer mu.Unlock()
			name := t.Name()
			if data[name] == nil {
				data[name] = core.NewMemoryStore(core.WithMemoryClock(clock))
				used[name] = map[*client]bool{}
				t.Cleanup(func() { skipped[name] = t.Skipped() })
			}
			opened[name]++
			c := &client{MemoryStore: data[name]}
			c.acquired = func() {
				mu.Lock()
				defer mu.Unlock()
				used[name][c] = true
			}
			return c
		}, conformance.Options{AdvanceTime: clock.Advance, Callers: callers})
	})
	// batch-partial-answer needs Options.FailGroup, which a store answering
	// a batch whole (as the memory store does) cannot offer: it skips
	// before it acquires.
	const needsGroups = "TestMemoryStoreOnePerCase/kit/batch-partial-answer"
	for name, s := range skipped {
		if s && name != needsGroups {
			t.Errorf("case %s: skipped = %v", name, s)
		}
	}
	if len(skipped) != len(conformance.Cases()) {
		t.Errorf("newStore was called for %d cases, want %d", len(skipped), len(conformance.Cases()))
	}
	for _, c := range conformance.Cases() {
		name := "TestMemoryStoreOnePerCase/kit/" + c.Name
		calls, through := 1, 1 // newStore calls, stores that took an Acquire
		switch {
		case c.Name == "race-takeover-expired-key":
			calls, through = 1+3, 1+3 // three rounds, each racer on the next caller
		case c.Concurrent:
			calls, through = 1+callers, callers // the case's store, and one per racing caller
		case c.Group == "instances":
			calls, through = 3, 3 // one per instance
		}
		if name == needsGroups {
			calls, through = 1, 0
		}
		if opened[name] < calls || len(used[name]) < through {
			t.Errorf("case %s: newStore called %d times, %d stores acquired through; want at least %d and %d", c.Name, opened[name], len(used[name]), calls, through)
		}
	}
}

// client is a store value of the memory store of a case, as a driver's
// newStore returns a new client of one database.
type client struct {
	*core.MemoryStore
	acquired func()
}

func (c *client) Acquire(ctx context.Context, key, owner string, ttl time.Duration) (int64, bool, error) {
	c.acquired()
	return c.MemoryStore.Acquire(ctx, key, owner, ttl)
}

func TestCasesAreDescribed(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range conformance.Cases() {
		switch {
		case c.Name == "" || c.Catches == "" || c.Fix == "" || c.Group == "":
			t.Errorf("case %+v lacks a name, a group, what it catches or its usual fix", c)
		case seen[c.Name]:
			t.Errorf("two cases are named %s", c.Name)
		}
		seen[c.Name] = true
	}
}
