package core_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/leasehold/leasehold/core"
)

// orderLog is the one sequence that a recording store and the test's
// callbacks write to, so that their order can be checked.
type orderLog struct {
	mu      sync.Mutex
	entries []string
}

func (o *orderLog) add(s string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.entries = append(o.entries, s)
}

func (o *orderLog) list() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.entries)
}

// index returns where entry first is, failing the test if it is missing.
func (o *orderLog) index(t *testing.T, entry string) int {
	t.Helper()
	all := o.list()
	i := slices.Index(all, entry)
	if i < 0 {
		t.Fatalf("%q never happened; order: %q", entry, all)
	}
	return i
}

// inOrder fails the test unless entries happened in this order.
func (o *orderLog) inOrder(t *testing.T, entries ...string) {
	t.Helper()
	for i := 1; i < len(entries); i++ {
		if o.index(t, entries[i-1]) > o.index(t, entries[i]) {
			t.Fatalf("%q happened after %q; order: %q", entries[i-1], entries[i], o.list())
		}
	}
}

// recordingStore records successful acquisitions and every release.
type recordingStore struct {
	inner core.LockStore
	log   *orderLog
}

func (s recordingStore) Acquire(ctx context.Context, key, owner string, ttl time.Duration) (int64, bool, error) {
	token, ok, err := s.inner.Acquire(ctx, key, owner, ttl)
	if ok {
		s.log.add("acquire " + key)
	}
	return token, ok, err
}

func (s recordingStore) Renew(ctx context.Context, key, owner string, ttl time.Duration) (bool, error) {
	return s.inner.Renew(ctx, key, owner, ttl)
}

func (s recordingStore) Release(ctx context.Context, key, owner string) (bool, error) {
	s.log.add("release " + key)
	return s.inner.Release(ctx, key, owner)
}

// shutdownFixture is one instance, on a recording store, with a job that
// blocks until finish is closed, an election it leads and a plain lock.
type shutdownFixture struct {
	c       *jobCluster
	nd      *jobNode
	order   *orderLog
	started chan context.Context
	finish  chan struct{}
	runDone <-chan error
	lost    chan error
}

func newShutdownFixture(t *testing.T) *shutdownFixture {
	t.Helper()
	f := &shutdownFixture{
		c:       newJobCluster(t, 0),
		order:   &orderLog{},
		started: make(chan context.Context, 1),
		finish:  make(chan struct{}),
		lost:    make(chan error, 1),
	}
	f.nd = f.c.newNode("node0", recordingStore{inner: f.c.store, log: f.order})
	f.c.nodes = append(f.c.nodes, f.nd)
	f.c.addJob(func(nd *jobNode) func(ctx context.Context) error {
		return func(ctx context.Context) error {
			f.started <- ctx
			<-f.finish // ignores ctx
			f.order.add("run end")
			return nil
		}
	}, core.WithJobKey("job"), core.OnOneInstance(), core.WithoutOverlapping(), core.WithJobTTL(jobTTL))
	if _, err := f.nd.locks.Elect("leader", core.Campaign{
		TTL:        electionTTL,
		OnAcquired: func(*core.Lock) error { return nil },
		OnLost: func(err error) {
			f.order.add("leader OnLost")
			f.lost <- err
		},
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.nd.locks.Acquire(context.Background(), "plain", core.WithTTL(jobTTL)); err != nil {
		t.Fatal(err)
	}
	f.runDone = runAsync(f.nd.job, context.Background())
	return f
}

// closing waits until the instance takes no new ticks, as Close's first step.
func (f *shutdownFixture) closing(t *testing.T) {
	t.Helper()
	pollUntil(t, "Run to report SkipShuttingDown", func() bool {
		r, _ := skipReason(f.nd.job.Run(context.Background()))
		return r == core.SkipShuttingDown
	})
}

func TestCloseOrder(t *testing.T) {
	f := newShutdownFixture(t)
	runCtx := recvWithin(t, "the run to start", f.started)
	// Minutes pass during the run: everything stays renewed, and the run
	// started more than a second ago.
	f.c.advance(3 * time.Minute)

	closed := make(chan error, 1)
	go func() { closed <- f.nd.locks.Close(context.Background()) }()
	f.closing(t)

	// Close waits for the run and, meanwhile, lets nothing go.
	notYet(t, "Close", closed)
	for _, key := range []string{"job", "job:owner", "leader", "plain"} {
		if got := f.c.holderOf(key); got != "node0" {
			t.Fatalf("%q held by %q while Close waits for the run", key, got)
		}
	}
	if err := runCtx.Err(); err != nil {
		t.Fatalf("the run was cancelled while Close still waited: %v", context.Cause(runCtx))
	}
	close(f.finish)
	if err := recvWithin(t, "Close", closed); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := recvWithin(t, "Run", f.runDone); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if err := recvWithin(t, "OnLost", f.lost); err != nil {
		t.Fatalf("OnLost on Close = %v, want nil", err)
	}

	// The run ends and frees its lock, then the job's lease goes back, then
	// the election steps down, then the other locks are released.
	f.order.inOrder(t, "acquire job:owner", "acquire job", "run end", "release job", "release job:owner", "leader OnLost", "release leader", "release plain")
	all := f.order.list()
	if last := slices.Index(all, "run end"); slices.ContainsFunc(all[last:], func(s string) bool { return strings.HasPrefix(s, "acquire") }) {
		t.Fatalf("something was acquired during Close: %q", all)
	}
	if infos, _ := f.c.store.List(context.Background(), ""); len(infos) != 0 {
		t.Fatalf("locks left after Close: %+v", infos)
	}
	// After Close: no ticks, no new guards, nothing held.
	if r, _ := skipReason(f.nd.job.Run(context.Background())); r != core.SkipShuttingDown {
		t.Fatal("Run after Close did not report SkipShuttingDown")
	}
	if _, err := f.nd.locks.Acquire(context.Background(), "x"); !errors.Is(err, core.ErrClosed) {
		t.Fatalf("Acquire after Close: %v", err)
	}
	if err := f.nd.locks.Close(context.Background()); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

func TestCloseStopsWaitingForARunWhenItsContextEnds(t *testing.T) {
	f := newShutdownFixture(t)
	runCtx := recvWithin(t, "the run to start", f.started)
	f.c.advance(2 * time.Second)

	ctx, cancel := context.WithCancel(context.Background())
	closed := make(chan error, 1)
	go func() { closed <- f.nd.locks.Close(ctx) }()
	f.closing(t)
	notYet(t, "Close", closed)

	// The shutdown deadline passes: Close stops waiting for the run, which
	// ignores its context, cancels it and finishes the shutdown.
	cancel()
	if err := recvWithin(t, "Close", closed); err != nil {
		t.Fatalf("Close: %v", err)
	}
	<-runCtx.Done()
	cause := context.Cause(runCtx)
	if !errors.Is(cause, core.ErrClosed) || !errors.Is(cause, context.Canceled) || !strings.Contains(cause.Error(), "shutdown stopped waiting") {
		t.Fatalf("run context cause = %v, want ErrClosed wrapping the shutdown context's end", cause)
	}
	notYet(t, "the run", f.runDone)
	if infos, _ := f.c.store.List(context.Background(), ""); len(infos) != 0 {
		t.Fatalf("locks left after Close: %+v", infos)
	}
	f.order.inOrder(t, "release job:owner", "release leader", "release job")
	if i := slices.Index(f.order.list(), "run end"); i >= 0 {
		t.Fatal("the run ended before Close returned")
	}

	// The run that outlived Close still returns.
	close(f.finish)
	if err := recvWithin(t, "the run", f.runDone); err != nil {
		t.Fatalf("Run = %v", err)
	}
}

func TestRunWithADoneContextDoesNotRun(t *testing.T) {
	c := newJobCluster(t, 1)
	c.addJob(nil, core.WithJobKey("j"), core.OnOneInstance(), core.WithJobTTL(jobTTL))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := c.nodes[0].job.Run(ctx); !errors.Is(err, context.Canceled) || c.totalRuns() != 0 {
		t.Fatalf("Run(done ctx) = %v after %d runs", err, c.totalRuns())
	}
	if got := c.holderOf("j:owner"); got != "" {
		t.Fatalf("lease taken by %q for a tick that did not run", got)
	}
}
