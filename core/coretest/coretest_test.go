package coretest_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/leasehold/leasehold/core"
	"github.com/leasehold/leasehold/core/coretest"
)

func TestNewLocksIsClosedWhenTheTestEnds(t *testing.T) {
	store := core.NewMemoryStore()
	var l *core.Locks
	t.Run("inner", func(t *testing.T) {
		l = coretest.NewLocks(t, store, core.WithInstanceName("inner"))
		if _, err := l.Acquire(context.Background(), "k"); err != nil {
			t.Fatal(err)
		}
	})
	if _, err := l.Acquire(context.Background(), "other"); !errors.Is(err, core.ErrClosed) {
		t.Fatalf("Acquire after the test ended: %v, want ErrClosed", err)
	}
	if live, _ := store.List(context.Background(), ""); len(live) != 0 {
		t.Fatalf("locks left after Close: %v", live)
	}
}

func TestNewLocksLogsWhereOptsSay(t *testing.T) {
	var logs coretest.LogBuffer
	clock := core.NewManualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	l := coretest.NewLocks(t, core.NewMemoryStore(core.WithMemoryClock(clock)), core.WithClock(clock), core.WithLogger(logs.Logger()))
	if _, err := l.Acquire(context.Background(), "report"); err != nil {
		t.Fatal(err)
	}
	if n := logs.Count("level=DEBUG", "lock acquired", "key=report"); n != 1 {
		t.Fatalf("%d acquisition lines, want 1:\n%s", n, logs.String())
	}
}

func TestLogBufferTakesConcurrentWrites(t *testing.T) {
	var logs coretest.LogBuffer
	log := logs.Logger()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for range 50 {
				log.Info("tick", "worker", i)
			}
		})
	}
	wg.Wait()
	if n := logs.Count("msg=tick"); n != 400 {
		t.Fatalf("%d whole lines, want 400", n)
	}
	if n := logs.Count("msg=tick", "worker=3"); n != 50 {
		t.Fatalf("%d lines of worker 3, want 50", n)
	}
	if got := logs.Lines("worker=3"); len(got) != 50 || !strings.HasSuffix(got[0], "\n") {
		t.Fatalf("Lines = %d lines, first %q", len(got), got[0])
	}
}

func TestFencedResourceRefusesALowerToken(t *testing.T) {
	var r coretest.FencedResource
	if err := r.Write(5, "first"); err != nil {
		t.Fatal(err)
	}
	if err := r.Write(5, "again"); err != nil {
		t.Fatalf("a write with the same token: %v", err)
	}
	err := r.Write(4, "late")
	if !errors.Is(err, coretest.ErrStaleToken) || !strings.Contains(err.Error(), "4 < 5") {
		t.Fatalf("a write with a lower token: %v, want ErrStaleToken saying 4 < 5", err)
	}
	if token, value := r.Read(); token != 5 || value != "again" {
		t.Fatalf("Read = %d, %q; want 5, \"again\"", token, value)
	}
	if err := r.Write(6, "next"); err != nil {
		t.Fatal(err)
	}
	if token, value := r.Read(); token != 6 || value != "next" {
		t.Fatalf("Read = %d, %q; want 6, \"next\"", token, value)
	}
}

func TestHoldMany(t *testing.T) {
	store := core.NewMemoryStore()
	h := coretest.HoldMany(t, store, "many", 100, core.WithDefaultTTL(9*time.Second))
	if live, err := store.List(context.Background(), "many:"); err != nil || len(live) != 100 {
		t.Fatalf("%d live locks after HoldMany(100), %v", len(live), err)
	}
	// Ten periods of 3s: without the renewals each confirms, every lock
	// would be lost after three.
	for range 10 {
		h.Period()
	}
	if n := h.Lost(); n != 0 || h.Clock.Now().Sub(time.Unix(1_700_000_000, 0)) != 30*time.Second {
		t.Fatalf("%d of 100 locks lost after 10 periods, clock at %v", n, h.Clock.Now())
	}
}
