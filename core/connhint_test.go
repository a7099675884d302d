package core_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold/core"
	"github.com/leasehold/leasehold/core/connhint"
	"github.com/leasehold/leasehold/core/coretest"
)

// refusedConnection returns the error of a dial to an address nothing
// listens at: what a store's client returns when its server is down.
func refusedConnection(t *testing.T) error {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	_, err = net.Dial("tcp", addr)
	if err == nil {
		t.Fatalf("a dial to %s, closed, succeeded", addr)
	}
	return err
}

// TestStoreErrorsCarryTheirLikelyCause: an acquire whose store cannot
// connect returns the error with its hint, and a renewal that fails so logs
// it, so a reader of the log learns that nothing listens, not only
// "connection refused".
func TestStoreErrorsCarryTheirLikelyCause(t *testing.T) {
	down := refusedConnection(t)
	clock := core.NewManualClock(t0)
	spy := newSpy(core.NewMemoryStore(core.WithMemoryClock(clock)), clock)
	buf := &coretest.LogBuffer{}
	l := coretest.NewLocks(t, spy, core.WithClock(clock), core.WithLogger(buf.Logger()))

	spy.acquireErr = down
	_, err := l.Acquire(context.Background(), "report")
	var hinted *connhint.Error
	if !errors.As(err, &hinted) || !errors.Is(err, down) {
		t.Fatalf("Acquire on a store that cannot connect = %v; want the store's error with a hint", err)
	}
	if !strings.Contains(err.Error(), "nothing listens at that address") {
		t.Errorf("Acquire's error %q does not name the likely cause", err)
	}

	spy.acquireErr = nil
	lk := mustAcquire(t, l, "report", core.WithTTL(30*time.Second))
	spy.setRenewErr(down)
	clock.Advance(10 * time.Second)
	if buf.Count("renewal failed", "nothing listens at that address") == 0 {
		t.Errorf("a renewal that cannot connect is logged without its likely cause:\n%s", buf)
	}
	spy.setRenewErr(nil)
	_ = lk.Release(context.Background())
}

// TestStoreErrorsWithoutACauseAreUnchanged: an error that shows no
// connection cause is returned as the store gave it.
func TestStoreErrorsWithoutACauseAreUnchanged(t *testing.T) {
	clock := core.NewManualClock(t0)
	spy := newSpy(core.NewMemoryStore(core.WithMemoryClock(clock)), clock)
	l := coretest.NewLocks(t, spy, core.WithClock(clock))
	spy.acquireErr = errors.New("ERR unknown command 'EVALSHA'")
	_, err := l.Acquire(context.Background(), "report")
	if err == nil || errors.As(err, new(*connhint.Error)) || strings.Contains(err.Error(), "hint") {
		t.Fatalf("Acquire = %v; want the store's error without a hint", err)
	}
}
