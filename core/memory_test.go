package core_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/leasehold/leasehold/core"
)

var bg = context.Background()

func memAcquire(t *testing.T, s *core.MemoryStore, key, owner string, ttl time.Duration) (int64, bool) {
	t.Helper()
	token, ok, err := s.Acquire(bg, key, owner, ttl)
	if err != nil {
		t.Fatalf("Acquire(%q, %q): %v", key, owner, err)
	}
	return token, ok
}

func memRenew(t *testing.T, s *core.MemoryStore, key, owner string, ttl time.Duration) bool {
	t.Helper()
	ok, err := s.Renew(bg, key, owner, ttl)
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

func memRelease(t *testing.T, s *core.MemoryStore, key, owner string) bool {
	t.Helper()
	ok, err := s.Release(bg, key, owner)
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

func TestMemoryStoreExpiry(t *testing.T) {
	clock := core.NewManualClock(t0)
	s := core.NewMemoryStore(core.WithMemoryClock(clock))
	first, ok := memAcquire(t, s, "k", "a", 10*time.Second)
	if !ok || first <= 0 {
		t.Fatalf("Acquire of a free key: token %d, ok %v", first, ok)
	}
	clock.Advance(10*time.Second - time.Millisecond)
	if _, ok := memAcquire(t, s, "k", "b", time.Second); ok {
		t.Fatal("took a key 1ms before it expired")
	}
	if memRenew(t, s, "k", "b", time.Second) || memRelease(t, s, "k", "b") {
		t.Fatal("another owner renewed or released the lock")
	}
	if infos := live(t, s); len(infos) != 1 || infos[0].ExpiresIn != time.Millisecond {
		t.Fatalf("List 1ms before expiry: %+v", infos)
	}

	clock.Advance(time.Millisecond) // expired: gone for every method
	if infos := live(t, s); len(infos) != 0 {
		t.Fatalf("List shows an expired lock: %+v", infos)
	}
	if memRenew(t, s, "k", "a", 10*time.Second) {
		t.Fatal("renewed an expired lock")
	}
	if memRelease(t, s, "k", "a") {
		t.Fatal("released an expired lock")
	}
	second, ok := memAcquire(t, s, "k", "b", 10*time.Second)
	if !ok || second <= first {
		t.Fatalf("Acquire after expiry: token %d (before %d), ok %v", second, first, ok)
	}
	if memRelease(t, s, "k", "a") {
		t.Fatal("the expired owner released the new owner's lock")
	}

	// Renew moves the expiry to ttl from now.
	clock.Advance(5 * time.Second)
	if !memRenew(t, s, "k", "b", 20*time.Second) {
		t.Fatal("the holder could not renew")
	}
	clock.Advance(20*time.Second - time.Millisecond)
	if holder(t, s, "k") != "b" {
		t.Fatal("renewed lock expired early")
	}
	clock.Advance(time.Millisecond)
	if holder(t, s, "k") != "" {
		t.Fatal("renewed lock outlived its new expiry")
	}
}

func TestMemoryStoreRelease(t *testing.T) {
	clock := core.NewManualClock(t0)
	s := core.NewMemoryStore(core.WithMemoryClock(clock))
	first, _ := memAcquire(t, s, "k", "a", time.Minute)
	if memRelease(t, s, "k", "b") {
		t.Fatal("released for another owner")
	}
	if !memRelease(t, s, "k", "a") {
		t.Fatal("the holder could not release")
	}
	if memRelease(t, s, "k", "a") || memRenew(t, s, "k", "a", time.Minute) {
		t.Fatal("a released lock was released or renewed again")
	}
	if next, ok := memAcquire(t, s, "k", "b", time.Minute); !ok || next <= first {
		t.Fatalf("Acquire after release: token %d (before %d), ok %v", next, first, ok)
	}
}

func TestMemoryStoreTokenFloor(t *testing.T) {
	clock := core.NewManualClock(t0)
	s := core.NewMemoryStore(core.WithMemoryClock(clock))
	last := map[string]int64{}
	keys := []string{"a", "b", "c"}
	for round := range 4 {
		for _, k := range keys {
			owner := fmt.Sprintf("%s-%d", k, round)
			token, ok := memAcquire(t, s, k, owner, time.Minute)
			if !ok || token <= last[k] {
				t.Fatalf("round %d: %s got token %d after %d", round, k, token, last[k])
			}
			last[k] = token
			if round%2 == 0 { // released (the floor stays), else left to expire
				memRelease(t, s, k, owner)
			}
		}
		clock.Advance(time.Minute)
		s.ResetTokens(context.Background()) // as a restore from an old backup would
	}
	// A key the store never saw starts afresh: positive.
	if token, ok := memAcquire(t, s, "new", "x", time.Minute); !ok || token <= 0 {
		t.Fatalf("new key after ResetTokens: token %d", token)
	}
}

func TestMemoryStoreList(t *testing.T) {
	clock := core.NewManualClock(t0)
	s := core.NewMemoryStore(core.WithMemoryClock(clock))
	tokens := map[string]int64{}
	for _, k := range []string{"jobs/b", "jobs/a", "elections/x", "jobs/released", "jobs/expired", "jobsx"} {
		ttl := time.Minute
		if k == "jobs/expired" {
			ttl = time.Second
		}
		tokens[k], _ = memAcquire(t, s, k, "owner-"+k, ttl)
	}
	memRelease(t, s, "jobs/released", "owner-jobs/released")
	clock.Advance(time.Second)

	infos, err := s.List(bg, "jobs/")
	if err != nil {
		t.Fatal(err)
	}
	want := []core.LockInfo{
		{Key: "jobs/a", Owner: "owner-jobs/a", Token: tokens["jobs/a"], ExpiresIn: 59 * time.Second},
		{Key: "jobs/b", Owner: "owner-jobs/b", Token: tokens["jobs/b"], ExpiresIn: 59 * time.Second},
	}
	if !slices.Equal(infos, want) {
		t.Fatalf("List(jobs/) = %+v, want %+v", infos, want)
	}
	all, _ := s.List(bg, "")
	var keys []string
	for _, info := range all {
		keys = append(keys, info.Key)
	}
	if want := []string{"elections/x", "jobs/a", "jobs/b", "jobsx"}; !slices.Equal(keys, want) {
		t.Fatalf("List() keys %v, want %v", keys, want)
	}
}

var _ core.Lister = (*core.MemoryStore)(nil)

func TestMemoryStoreExactKeys(t *testing.T) {
	s := core.NewMemoryStore(core.WithMemoryClock(core.NewManualClock(t0)))
	for i, k := range []string{"key", "Key", "KEY", "key ", " key", "café", "cafe\u0301"} {
		if _, ok := memAcquire(t, s, k, fmt.Sprint("o", i), time.Minute); !ok {
			t.Fatalf("%q was folded into another key", k)
		}
	}
}

func TestMemoryStoreCancelledContext(t *testing.T) {
	s := core.NewMemoryStore(core.WithMemoryClock(core.NewManualClock(t0)))
	memAcquire(t, s, "k", "a", time.Minute)
	ctx, cancel := context.WithCancel(bg)
	cancel()
	if _, _, err := s.Acquire(ctx, "other", "a", time.Minute); !errors.Is(err, context.Canceled) {
		t.Errorf("Acquire: %v", err)
	}
	if _, err := s.Renew(ctx, "k", "a", time.Minute); !errors.Is(err, context.Canceled) {
		t.Errorf("Renew: %v", err)
	}
	if _, err := s.Release(ctx, "k", "a"); !errors.Is(err, context.Canceled) {
		t.Errorf("Release: %v", err)
	}
	if _, err := s.List(ctx, ""); !errors.Is(err, context.Canceled) {
		t.Errorf("List: %v", err)
	}
	if holder(t, s, "k") != "a" || holder(t, s, "other") != "" {
		t.Fatal("a failed call changed the store")
	}
}

func TestMemoryStoreOneWinner(t *testing.T) {
	s := core.NewMemoryStore()
	const n = 50
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		wins int
	)
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			_, ok, err := s.Acquire(bg, "k", fmt.Sprint(i), time.Minute)
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			defer mu.Unlock()
			if ok {
				wins++
			}
		}()
	}
	close(start)
	wg.Wait()
	if wins != 1 {
		t.Fatalf("%d of %d concurrent acquirers won", wins, n)
	}
}

func TestMemoryStoreString(t *testing.T) {
	if s := core.NewMemoryStore().String(); !strings.Contains(s, "excludes callers in this process only") {
		t.Fatalf("String() = %q: does not state the limit", s)
	}
}
