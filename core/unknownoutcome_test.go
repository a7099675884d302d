package core_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/leasehold/leasehold/core"
	"github.com/leasehold/leasehold/core/coretest"
)

var errReplyLost = errors.New("invalid connection")

// lostReply takes the key in the store, then fails the call, as a MySQL
// acquire whose COMMIT reply is lost, or a call that times out after the
// server took the key.
type lostReply struct{ core.LockStore }

func (s lostReply) Acquire(ctx context.Context, key, owner string, ttl time.Duration) (int64, bool, error) {
	if _, _, err := s.LockStore.Acquire(ctx, key, owner, ttl); err != nil {
		return 0, false, err
	}
	return 0, false, errReplyLost
}

// TestAmbiguousAcquireReleases: an Acquire whose outcome is unknown
// releases the key with its owner id, so the key is free at once, not after
// a ttl held by nobody.
func TestAmbiguousAcquireReleases(t *testing.T) {
	for _, wait := range []time.Duration{0, time.Minute} {
		clock := core.NewManualClock(t0)
		store := core.NewMemoryStore(core.WithMemoryClock(clock))
		buf := &coretest.LogBuffer{}
		log := buf.Logger()
		locks := coretest.NewLocks(t, lostReply{store}, core.WithClock(clock), core.WithLogger(log))

		lk, err := locks.Acquire(context.Background(), "k", core.WithTTL(time.Hour), core.WithWait(wait))
		if lk != nil || !errors.Is(err, errReplyLost) {
			t.Fatalf("Acquire (wait %v): %v, %v; want the store's error", wait, lk, err)
		}
		if h := holder(t, store, "k"); h != "" {
			t.Fatalf("after a failed Acquire (wait %v), the store holds k for %s until its ttl", wait, h)
		}
		if len(buf.Lines("level=DEBUG", "released a lock this process must not keep", "key=k")) != 1 {
			t.Fatalf("no debug line for the release:\n%s", buf)
		}
		mustAcquire(t, coretest.NewLocks(t, store, core.WithClock(clock)), "k")
	}
}

// TestAmbiguousAcquireReleaseFails: a release that fails too is logged,
// and the caller still gets the acquire's error, bounded in time.
func TestAmbiguousAcquireReleaseFails(t *testing.T) {
	clock := core.NewManualClock(t0)
	store := core.NewMemoryStore(core.WithMemoryClock(clock))
	buf := &coretest.LogBuffer{}
	log := buf.Logger()
	locks := coretest.NewLocks(t, failingRelease{lostReply{store}}, core.WithClock(clock), core.WithLogger(log))
	if _, err := locks.Acquire(context.Background(), "k"); !errors.Is(err, errReplyLost) {
		t.Fatalf("Acquire: %v; want the store's error", err)
	}
	if len(buf.Lines("level=WARN", "could not release what a failed acquire may have taken", "key=k")) != 1 {
		t.Fatalf("no warning for the failed release:\n%s", buf)
	}
}

type failingRelease struct{ core.LockStore }

func (failingRelease) Release(context.Context, string, string) (bool, error) {
	return false, errStoreDown
}
