package gocronguard_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/go-co-op/gocron/v2"
	"github.com/google/uuid"
	"github.com/leasehold/leasehold/adapters/gocronguard"
	"github.com/leasehold/leasehold/core"
	"github.com/leasehold/leasehold/core/coretest"
)

// newLocks returns instance name's Locks on store, with ttl.
func newLocks(t *testing.T, store core.LockStore, name string, ttl time.Duration, opts ...core.Option) *core.Locks {
	return coretest.NewLocks(t, store, append([]core.Option{core.WithInstanceName(name), core.WithDefaultTTL(ttl)}, opts...)...)
}

func newScheduler(t *testing.T, opts ...gocron.SchedulerOption) gocron.Scheduler {
	t.Helper()
	s, err := gocron.NewScheduler(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Shutdown() })
	return s
}

// perSecond records what happened to each instance's tick, by whole second.
type perSecond struct {
	mu      sync.Mutex
	ran     map[time.Time][]string
	skipped map[time.Time][]string
	skipErr []error
	runs    chan string
}

func (p *perSecond) note(m map[time.Time][]string, name string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	sec := time.Now().Truncate(time.Second)
	m[sec] = append(m[sec], name)
}

// TestLockerRunsEachTickOnOneInstance drives three real gocron schedulers,
// each with a Locker on its own core.Locks over one shared store, firing the
// same job at every whole second. Each tick runs on exactly one instance.
func TestLockerRunsEachTickOnOneInstance(t *testing.T) {
	store := core.NewMemoryStore()
	rec := &perSecond{ran: map[time.Time][]string{}, skipped: map[time.Time][]string{}, runs: make(chan string, 100)}
	var scheds []gocron.Scheduler
	for i := range 3 {
		name := fmt.Sprintf("node%d", i)
		locker, err := gocronguard.NewLocker(newLocks(t, store, name, 3*time.Second), gocronguard.WithKeyPrefix("gocron:"), gocronguard.WithMinHold(500*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		s := newScheduler(t, gocron.WithDistributedLocker(locker))
		_, err = s.NewJob(
			gocron.CronJob("* * * * * *", true),
			gocron.NewTask(func() {
				rec.note(rec.ran, name)
				rec.runs <- name
			}),
			gocron.WithName("report"),
			gocron.WithEventListeners(gocron.AfterLockError(func(_ uuid.UUID, _ string, err error) {
				rec.note(rec.skipped, name)
				rec.mu.Lock()
				rec.skipErr = append(rec.skipErr, err)
				rec.mu.Unlock()
			})),
		)
		if err != nil {
			t.Fatal(err)
		}
		scheds = append(scheds, s)
	}
	for _, s := range scheds {
		s.Start()
	}
	for n := range 3 {
		select {
		case <-rec.runs:
		case <-time.After(5 * time.Second):
			t.Fatalf("only %d runs in 5s", n)
		}
	}
	for _, s := range scheds {
		if err := s.Shutdown(); err != nil {
			t.Fatal(err)
		}
	}

	rec.mu.Lock()
	defer rec.mu.Unlock()
	full := 0
	for sec, ran := range rec.ran {
		if len(ran) != 1 {
			t.Errorf("second %s: ran on %v, want one instance", sec.Format(time.TimeOnly), ran)
		}
		if len(ran)+len(rec.skipped[sec]) == 3 {
			full++
		}
	}
	if full < 2 {
		t.Errorf("only %d seconds in which all three instances fired", full)
	}
	for _, err := range rec.skipErr {
		if !errors.Is(err, core.ErrNotAcquired) {
			t.Errorf("lock error %v, want ErrNotAcquired", err)
		}
	}
	if len(rec.skipErr) < 4 {
		t.Errorf("%d skipped ticks, want at least two per full second", len(rec.skipErr))
	}
}

// TestLockerMinHold runs on manual clocks: the instances' and the store's.
func TestLockerMinHold(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock, storeClock := core.NewManualClock(start), core.NewManualClock(start)
	store := core.NewMemoryStore(core.WithMemoryClock(storeClock))
	advance := func(d time.Duration) {
		storeClock.Advance(d)
		clock.Advance(d)
	}
	a, err := gocronguard.NewLocker(newLocks(t, store, "a", time.Minute, core.WithClock(clock)), gocronguard.WithMinHold(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	b, err := gocronguard.NewLocker(newLocks(t, store, "b", time.Minute, core.WithClock(clock)), gocronguard.WithMinHold(0))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	lk, err := a.Lock(ctx, "job")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Lock(ctx, "job"); !errors.Is(err, core.ErrNotAcquired) {
		t.Fatalf("second Lock during the run: %v, want ErrNotAcquired", err)
	}
	advance(50 * time.Millisecond)
	if err := lk.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	// The run ended; the tick fired late elsewhere is still skipped, until
	// the hold ends, 200ms after the run's start.
	if _, err := b.Lock(ctx, "job"); !errors.Is(err, core.ErrNotAcquired) {
		t.Fatalf("Lock right after a short run: %v, want ErrNotAcquired", err)
	}
	advance(149 * time.Millisecond)
	if _, err := b.Lock(ctx, "job"); !errors.Is(err, core.ErrNotAcquired) {
		t.Fatalf("Lock 199ms after the start: %v, want ErrNotAcquired", err)
	}
	advance(time.Millisecond)
	lk2, err := b.Lock(ctx, "job")
	if err != nil {
		t.Fatalf("Lock 200ms after the start, when the hold ends: %v", err)
	}
	// WithMinHold(0): released by Unlock itself.
	if err := lk2.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Lock(ctx, "job"); err != nil {
		t.Fatalf("Lock after an Unlock without hold: %v", err)
	}
}

func TestLockerKeepsTheLockWhenTheJobContextEnds(t *testing.T) {
	store := core.NewMemoryStore()
	a, _ := gocronguard.NewLocker(newLocks(t, store, "a", time.Minute), gocronguard.WithMinHold(0))
	b, _ := gocronguard.NewLocker(newLocks(t, store, "b", time.Minute), gocronguard.WithMinHold(0))
	ctx, cancel := context.WithCancel(context.Background())
	lk, err := a.Lock(ctx, "job")
	if err != nil {
		t.Fatal(err)
	}
	cancel() // gocron shutting down while the run goes on
	if _, err := b.Lock(context.Background(), "job"); !errors.Is(err, core.ErrNotAcquired) {
		t.Fatalf("Lock while the first run goes on: %v, want ErrNotAcquired", err)
	}
	if err := lk.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Lock(context.Background(), "job"); err != nil {
		t.Fatalf("Lock after Unlock: %v", err)
	}
	if _, err := a.Lock(ctx, "other"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Lock with a done context: %v", err)
	}
}

func TestNewLockerRefusesBadOptions(t *testing.T) {
	l := newLocks(t, core.NewMemoryStore(), "a", time.Minute)
	if _, err := gocronguard.NewLocker(nil); !errors.Is(err, core.ErrInvalidArgument) {
		t.Errorf("nil locks: %v", err)
	}
	if _, err := gocronguard.NewLocker(l, gocronguard.WithTTL(time.Microsecond)); !errors.Is(err, core.ErrInvalidTTL) {
		t.Errorf("bad ttl: %v", err)
	}
	if _, err := gocronguard.NewLocker(l, gocronguard.WithMinHold(-time.Second)); !errors.Is(err, core.ErrInvalidArgument) {
		t.Errorf("negative hold: %v", err)
	}
}

// TestElectorRunsJobsOnTheLeaderOnly drives three real gocron schedulers with
// Electors: only the leader runs; when it shuts down, another instance
// leads within a campaign and runs from then on.
func TestElectorRunsJobsOnTheLeaderOnly(t *testing.T) {
	const ttl = 900 * time.Millisecond // campaigns every 300ms
	store := core.NewMemoryStore()
	runs := make(chan string, 1000)
	var locks []*core.Locks
	var electors []*gocronguard.Elector
	for i := range 3 {
		name := fmt.Sprintf("node%d", i)
		l := newLocks(t, store, name, ttl)
		e, err := gocronguard.NewElector(l, "scheduler-leader", core.Campaign{TTL: ttl})
		if err != nil {
			t.Fatal(err)
		}
		s := newScheduler(t, gocron.WithDistributedElector(e))
		if _, err := s.NewJob(gocron.DurationJob(50*time.Millisecond), gocron.NewTask(func() { runs <- name }), gocron.WithName("report")); err != nil {
			t.Fatal(err)
		}
		s.Start()
		locks, electors = append(locks, l), append(electors, e)
	}
	if err := electors[0].IsLeader(context.Background()); err != nil {
		t.Fatalf("node0, the first candidate: %v", err)
	}
	for _, e := range electors[1:] {
		if err := e.IsLeader(context.Background()); !errors.Is(err, gocronguard.ErrNotLeader) {
			t.Fatalf("follower IsLeader = %v, want ErrNotLeader", err)
		}
	}
	next := func() string {
		t.Helper()
		select {
		case who := <-runs:
			return who
		case <-time.After(5 * time.Second):
			t.Fatal("no run in 5s")
			return ""
		}
	}
	for range 5 {
		if who := next(); who != "node0" {
			t.Fatalf("%s ran while node0 leads", who)
		}
	}

	// node0 shuts down: it steps down, and another instance leads at its
	// next campaign. node0's scheduler still fires, but no longer runs.
	closed := time.Now()
	if err := locks[0].Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	newLeader := next()
	for newLeader == "node0" { // a run that began before Close returned
		newLeader = next()
	}
	if d := time.Since(closed); d > 5*ttl {
		t.Fatalf("new leader ran %v after the old one closed", d)
	}
	for range 5 {
		if who := next(); who != newLeader {
			t.Fatalf("%s ran while %s leads", who, newLeader)
		}
	}
}
