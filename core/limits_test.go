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

// concurrencyStore counts the Renew calls in flight at once. It is a plain
// LockStore (no batch renewal), so every renewal is a Renew call.
type concurrencyStore struct {
	core.LockStore
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
	return s.LockStore.Renew(ctx, key, owner, ttl)
}

func TestRenewalBurstIsBounded(t *testing.T) {
	clock := core.NewManualClock(t0)
	store := &concurrencyStore{LockStore: core.NewMemoryStore(core.WithMemoryClock(clock)), gate: make(chan struct{})}
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
	for _, tc := range []struct{ given, used string }{
		{"web\x00\xff-1", "web??-1"},
		{strings.Repeat("é", 150), strings.Repeat("é", 100)}, // 300 bytes: cut at 200, between characters
		{strings.Repeat("x", 199) + "é", strings.Repeat("x", 199)},
		{strings.Repeat("x", 200), strings.Repeat("x", 200)}, // fits: kept, without a warning
	} {
		clock := core.NewManualClock(t0)
		var logs coretest.LogBuffer
		l := coretest.NewLocks(t, core.NewMemoryStore(core.WithMemoryClock(clock)), core.WithClock(clock), core.WithInstanceName(tc.given), core.WithLogger(logs.Logger()))
		name, _, _ := strings.Cut(mustAcquire(t, l, "k").Owner(), "/")
		if name != tc.used {
			t.Errorf("owner id prefix = %q; want %q", name, tc.used)
		}
		want := 1
		if tc.used == tc.given {
			want = 0
		}
		if got := logs.Lines("level=WARN", "instance name changed to fit owner ids", "used="); len(got) != want {
			t.Errorf("name %q: %d warnings, want %d: %q", tc.given, len(got), want, logs.String())
		}
	}
}
