package core_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leasehold/leasehold/core"
	"github.com/leasehold/leasehold/core/coretest"
)

// concurrencyStore counts the Renew calls in flight at once.
type concurrencyStore struct {
	*core.MemoryStore
	inFlight, peak atomic.Int64
	gate           chan struct{} // Renew waits on it, so calls overlap
}

func (s *concurrencyStore) Renew(ctx context.Context, key, owner string, ttl time.Duration) (bool, error) {
	n := s.inFlight.Add(1)
	defer s.inFlight.Add(-1)
	for {
		p := s.peak.Load()
		if n <= p || s.peak.CompareAndSwap(p, n) {
			break
		}
	}
	<-s.gate
	return s.MemoryStore.Renew(ctx, key, owner, ttl)
}

func TestRenewalBurstIsBounded(t *testing.T) {
	clock := core.NewManualClock(t0)
	store := &concurrencyStore{MemoryStore: core.NewMemoryStore(core.WithMemoryClock(clock)), gate: make(chan struct{})}
	l := coretest.NewLocks(t, store, core.WithClock(clock))
	const n = 500
	for i := range n {
		mustAcquire(t, l, "burst:"+strings.Repeat("k", i%7)+string(rune('a'+i%26))+time.Duration(i).String())
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); clock.Advance(10 * time.Second) }()
	// Let every renewal through, one at a time, while the firing runs.
	for range n {
		store.gate <- struct{}{}
	}
	wg.Wait()
	if peak := store.peak.Load(); peak < 2 || peak > 32 {
		t.Fatalf("peak concurrent renewals = %d; want between 2 and 32: a burst of due locks must overlap, within a bound", peak)
	}
}

func TestNewRefusesTypedNilStore(t *testing.T) {
	var store *core.MemoryStore
	_, err := core.New(store)
	if !errors.Is(err, core.ErrInvalidArgument) {
		t.Fatalf("New(nil *MemoryStore) = %v; want ErrInvalidArgument", err)
	}
}

func TestInstanceNameIsSanitised(t *testing.T) {
	clock := core.NewManualClock(t0)
	store := core.NewMemoryStore(core.WithMemoryClock(clock))
	l := coretest.NewLocks(t, store, core.WithClock(clock), core.WithInstanceName("web\x00\xff-1"))
	lk := mustAcquire(t, l, "k")
	name, _, _ := strings.Cut(lk.Owner(), "/")
	if name != "web??-1" {
		t.Fatalf("owner id prefix = %q; want NUL and invalid UTF-8 replaced: %q", name, "web??-1")
	}
}
