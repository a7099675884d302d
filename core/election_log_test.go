package core_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leasehold/leasehold/core"
	"github.com/leasehold/leasehold/core/coretest"
)

// refusingRenew refuses every renewal once refuse is set, as a store does
// when another owner holds the key.
type refusingRenew struct {
	core.LockStore
	refuse *atomic.Bool
}

func (s refusingRenew) Renew(ctx context.Context, key, owner string, ttl time.Duration) (bool, error) {
	if s.refuse.Load() {
		return false, nil
	}
	return s.LockStore.Renew(ctx, key, owner, ttl)
}

// leadWithLog elects an instance that logs into buf and waits until it
// leads.
func leadWithLog(t *testing.T, store core.LockStore, clock *core.ManualClock, buf *coretest.LogBuffer) *core.Election {
	t.Helper()
	locks := coretest.NewLocks(t, store, core.WithClock(clock), core.WithLogger(buf.Logger()))
	e, err := locks.Elect("leader", core.Campaign{TTL: electionTTL, OnAcquired: func(*core.Lock) error { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "leadership", e.Leader)
	return e
}

// TestElectionLogsAStepDown: a leader that steps down (Stop) logs "stepped
// down" at info, not a loss with err=<nil>.
func TestElectionLogsAStepDown(t *testing.T) {
	clock := core.NewManualClock(t0)
	buf := &coretest.LogBuffer{}
	e := leadWithLog(t, core.NewMemoryStore(core.WithMemoryClock(clock)), clock, buf)
	if err := e.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if buf.Count("level=INFO", `msg="leasehold: stepped down"`, "key=leader") != 1 {
		t.Errorf("no info line \"stepped down\":\n%s", buf)
	}
	if buf.Count("leadership lost") != 0 || buf.Count("err=<nil>") != 0 {
		t.Errorf("a clean step-down is logged as a loss:\n%s", buf)
	}
}

// TestElectionLogsALossWithItsCause: a leader whose renewal is refused logs
// "leadership lost" with the cause.
func TestElectionLogsALossWithItsCause(t *testing.T) {
	clock := core.NewManualClock(t0)
	refuse := &atomic.Bool{}
	buf := &coretest.LogBuffer{}
	store := refusingRenew{core.NewMemoryStore(core.WithMemoryClock(clock)), refuse}
	e := leadWithLog(t, store, clock, buf)
	refuse.Store(true)
	clock.Advance(electionTTL / 3)
	eventually(t, "the loss", func() bool { return !e.Leader() })
	eventually(t, "the log line", func() bool {
		return buf.Count("level=INFO", `msg="leasehold: leadership lost"`, "key=leader", `cause="refused by the store"`) == 1
	})
	if buf.Count("stepped down") != 0 {
		t.Errorf("a loss is logged as a step-down:\n%s", buf)
	}
}

var errNoTable = errors.New(`relation "leasehold_locks" does not exist`)

// missingTable fails every call the same way, as a database without the
// locks table does.
type missingTable struct{ core.LockStore }

func (missingTable) Acquire(context.Context, string, string, time.Duration) (int64, bool, error) {
	return 0, false, errNoTable
}

func (missingTable) Release(context.Context, string, string) (bool, error) {
	return false, errNoTable
}

// TestFailedAcquireReleaseNoWarning: when the store refuses an acquire
// and its release alike, nothing was taken, and no warning says a lock
// could not be released; the caller gets the acquire's error.
func TestFailedAcquireReleaseNoWarning(t *testing.T) {
	buf := &coretest.LogBuffer{}
	locks := coretest.NewLocks(t, missingTable{core.NewMemoryStore()}, core.WithLogger(buf.Logger()))
	if _, err := locks.Acquire(context.Background(), "k"); !errors.Is(err, errNoTable) {
		t.Fatalf("Acquire: %v; want the store's error", err)
	}
	if buf.Count("level=WARN") != 0 {
		t.Errorf("a warning after an acquire that took nothing:\n%s", buf)
	}
	if buf.Count("level=DEBUG", "nothing was taken", "key=k") != 1 {
		t.Errorf("no debug line for the refused release:\n%s", buf)
	}
}
