package conformance

import (
	"context"
	"testing"
	"time"

	"github.com/leasehold/leasehold/core"
)

// flawedNotify is the memory store with one flaw of core.Notifier or
// core.TryAcquirer, each the way a real store could get it wrong.
type flawedNotify struct {
	*core.MemoryStore
	mute   bool // Subscribe reports live notifications and never wakes
	noLeft bool // a refused TryAcquire answers no time left
}

func (s *flawedNotify) Subscribe(key string, wake func()) (func(), bool) {
	if s.mute {
		return func() {}, true
	}
	return s.MemoryStore.Subscribe(key, wake)
}

func (s *flawedNotify) TryAcquire(ctx context.Context, key, owner string, ttl time.Duration) (int64, bool, time.Duration, error) {
	token, ok, left, err := s.MemoryStore.TryAcquire(ctx, key, owner, ttl)
	if s.noLeft {
		left = 0
	}
	return token, ok, left, err
}

// Each flaw fails its notify case, and only that case.
func TestBrokenNotifiersFailTheirCase(t *testing.T) {
	for _, c := range []struct {
		name    string
		flaw    func(*flawedNotify)
		catcher string
	}{
		{"mute", func(s *flawedNotify) { s.mute = true }, "notify-release-wakes"},
		{"no time left", func(s *flawedNotify) { s.noLeft = true }, "try-acquire-left"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			clock := core.NewManualClock(time.Unix(1_700_000_000, 0))
			mem := core.NewMemoryStore(core.WithMemoryClock(clock))
			store := &flawedNotify{MemoryStore: mem}
			c.flaw(store)
			checkCatches(t, shared(store), clock, mem.ResetTokens, c.catcher, nil, nil)
		})
	}
}
