package gocronguard_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-co-op/gocron/v2"

	"github.com/leasehold/leasehold/adapters/gocronguard"
	"github.com/leasehold/leasehold/core"
)

// perSecondRuns starts two schedulers 300ms apart, each with a Locker on
// its own Locks over one store, firing a job every second, and returns how
// many times the job ran in the 4.5 seconds after the first start.
func perSecondRuns(t *testing.T, readSchedules bool) int64 {
	t.Helper()
	store := core.NewMemoryStore()
	var runs atomic.Int64
	var scheds []gocron.Scheduler
	for _, name := range []string{"a", "b"} {
		locker, err := gocronguard.NewLocker(newLocks(t, store, name, 10*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		s := newScheduler(t, gocron.WithDistributedLocker(locker))
		if readSchedules {
			locker.ReadSchedules(s)
		}
		if _, err := s.NewJob(gocron.DurationJob(time.Second), gocron.NewTask(func() { runs.Add(1) }), gocron.WithName("report")); err != nil {
			t.Fatal(err)
		}
		scheds = append(scheds, s)
	}
	start := time.Now()
	scheds[0].Start()
	time.Sleep(300 * time.Millisecond) // the instances start apart
	scheds[1].Start()
	time.Sleep(4500*time.Millisecond - time.Since(start))
	for _, s := range scheds {
		if err := s.Shutdown(); err != nil {
			t.Fatal(err)
		}
	}
	return runs.Load()
}

// TestLockerPerSecondJobHoldsLessThanItsInterval: with the hold read from
// the schedule (900ms for a per-second job), a per-second job on two
// instances started 300ms apart runs once a second: 4 runs in 4.5s. With
// the fixed one-second hold, a tick finds the key still held by the run a
// second before, and runs are lost.
func TestLockerPerSecondJobHoldsLessThanItsInterval(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real schedulers for 4.5s")
	}
	t.Parallel()
	if n := perSecondRuns(t, true); n != 4 {
		t.Errorf("with the hold from the schedule: %d runs in 4.5s, want 4", n)
	}
}
