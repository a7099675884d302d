package gocronguard_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-co-op/gocron/v2"
	"github.com/google/uuid"
	"github.com/leasehold/leasehold/adapters/gocronguard"
	"github.com/leasehold/leasehold/core"
)

// seen is what a task saw of its run's lock.
type seen struct {
	key   string
	token int64
	held  bool
}

// TestTaskRunsUnderTheRunLock: a real gocron scheduler runs a task made by
// Locker.Task; each run sees its own run lock, held, with a token greater
// than the last run's.
func TestTaskRunsUnderTheRunLock(t *testing.T) {
	store := core.NewMemoryStore()
	locker, err := gocronguard.NewLocker(newLocks(t, store, "node0", time.Minute), gocronguard.WithKeyPrefix("gocron:"), gocronguard.WithMinHold(0))
	if err != nil {
		t.Fatal(err)
	}
	runs := make(chan seen, 100)
	s := newScheduler(t, gocron.WithDistributedLocker(locker))
	_, err = s.NewJob(gocron.DurationJob(20*time.Millisecond), locker.Task(func(ctx context.Context) error {
		lk := core.LockFromContext(ctx)
		if lk == nil {
			runs <- seen{}
			return nil
		}
		runs <- seen{lk.Key(), lk.Token(), lk.Held()}
		return nil
	}), gocron.WithName("report"), gocron.WithSingletonMode(gocron.LimitModeWait))
	if err != nil {
		t.Fatal(err)
	}
	s.Start()
	var last int64
	for i := range 3 {
		var r seen
		select {
		case r = <-runs:
		case <-time.After(5 * time.Second):
			t.Fatalf("only %d runs in 5s", i)
		}
		if r.key != "gocron:report" || !r.held {
			t.Fatalf("run %d saw lock %+v, want the held run lock \"gocron:report\"", i, r)
		}
		if r.token <= last {
			t.Fatalf("run %d: token %d, not above the last run's %d", i, r.token, last)
		}
		last = r.token
	}
}

// TestTaskContextEndsWhenTheRunLockIsLost: the run lock is lost while the
// task runs (the instance's clock and the store's are manual, gocron's is
// real): the task's context ends with the *core.LockLostError.
func TestTaskContextEndsWhenTheRunLockIsLost(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock, storeClock := core.NewManualClock(start), core.NewManualClock(start)
	store := core.NewMemoryStore(core.WithMemoryClock(storeClock))
	locker, err := gocronguard.NewLocker(newLocks(t, store, "node0", 9*time.Second, core.WithClock(clock)))
	if err != nil {
		t.Fatal(err)
	}
	running := make(chan *core.Lock, 1)
	ended := make(chan error, 1)
	s := newScheduler(t, gocron.WithDistributedLocker(locker))
	_, err = s.NewJob(gocron.OneTimeJob(gocron.OneTimeJobStartImmediately()), locker.Task(func(ctx context.Context) error {
		running <- core.LockFromContext(ctx)
		<-ctx.Done()
		ended <- context.Cause(ctx)
		return context.Cause(ctx)
	}), gocron.WithName("report"))
	if err != nil {
		t.Fatal(err)
	}
	s.Start()
	var lk *core.Lock
	select {
	case lk = <-running:
	case <-time.After(5 * time.Second):
		t.Fatal("the task did not run in 5s")
	}
	if lk == nil || lk.Key() != "report" {
		t.Fatalf("the task ran under lock %v, want the run lock \"report\"", lk)
	}
	// The process pauses past the ttl: the store expires the lock, and the
	// renewal sent when the process resumes is refused.
	storeClock.Advance(10 * time.Second)
	clock.Advance(3 * time.Second)
	var cause error
	select {
	case cause = <-ended:
	case <-time.After(5 * time.Second):
		t.Fatal("the task's context did not end in 5s after its lock was lost")
	}
	var lost *core.LockLostError
	if !errors.As(cause, &lost) || lost.Key != "report" || lost.Reason != core.LostRefused {
		t.Fatalf("the task's context ended with %v, want the run lock's *core.LockLostError", cause)
	}
}

// TestTaskWithoutTheLockersRunLock: a job that opts out of the distributed
// locker has no run lock; its task fails with ErrNoRunLock and its function
// does not run.
func TestTaskWithoutTheLockersRunLock(t *testing.T) {
	locker, err := gocronguard.NewLocker(newLocks(t, core.NewMemoryStore(), "node0", time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	failed := make(chan error, 1)
	ran := make(chan struct{}, 1)
	s := newScheduler(t, gocron.WithDistributedLocker(locker))
	_, err = s.NewJob(gocron.OneTimeJob(gocron.OneTimeJobStartImmediately()), locker.Task(func(ctx context.Context) error {
		ran <- struct{}{}
		return nil
	}), gocron.WithName("report"), gocron.WithDisabledDistributedJobLocker(true),
		gocron.WithEventListeners(gocron.AfterJobRunsWithError(func(_ uuid.UUID, _ string, err error) { failed <- err })))
	if err != nil {
		t.Fatal(err)
	}
	s.Start()
	select {
	case err := <-failed:
		if !errors.Is(err, gocronguard.ErrNoRunLock) {
			t.Fatalf("the task failed with %v, want ErrNoRunLock", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the task did not fail in 5s")
	}
	select {
	case <-ran:
		t.Fatal("the task's function ran without a run lock")
	default:
	}
}
