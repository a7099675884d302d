package shop

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/leasehold/leasehold/core"
	"github.com/leasehold/leasehold/core/coretest"
)

var start = time.Date(2026, 3, 2, 1, 59, 0, 0, time.UTC)

// cluster is three instances of the shop, each with its own core.Locks on
// one MemoryStore (the shared store), and each on its own ManualClock: three
// processes whose time the test moves. An instance whose clock stops is a
// paused or dead process: it renews nothing and notices nothing.
type cluster struct {
	t          *testing.T
	storeClock *core.ManualClock // the store's clock: expiry is measured on it
	store      *core.MemoryStore
	accounting *fakeAccounting
	warehouse  *fakeWarehouse
	logs       *coretest.LogBuffer
	db         *sql.DB
	nodes      []*node
}

// node is one instance of the shop.
type node struct {
	shop   *Shop
	clock  *core.ManualClock
	locks  *core.Locks
	jobs   *Jobs
	feed   *core.Election // set by tests that start the feed
	paused bool

	mu     sync.Mutex
	events []core.Event
}

// newCluster starts three instances with the shop's jobs registered.
func newCluster(t *testing.T) *cluster {
	c := newBareCluster(t)
	for _, n := range c.nodes {
		jobs, err := n.shop.NewJobs(n.locks)
		if err != nil {
			t.Fatal(err)
		}
		n.jobs = jobs
	}
	return c
}

// newBareCluster starts three instances with no job registered.
func newBareCluster(t *testing.T) *cluster {
	storeClock := core.NewManualClock(start)
	shops, accounting, warehouse, logs := newShops(t, 3)
	c := &cluster{
		t:          t,
		storeClock: storeClock,
		store:      core.NewMemoryStore(core.WithMemoryClock(storeClock)),
		accounting: accounting,
		warehouse:  warehouse,
		logs:       logs,
		db:         shops[0].DB,
	}
	for i, s := range shops {
		n := &node{shop: s, clock: core.NewManualClock(start)}
		locks, err := core.New(c.store,
			core.WithClock(n.clock),
			core.WithDefaultTTL(30*time.Second),
			core.WithLogger(s.Log),
			core.WithInstanceName(fmt.Sprint("shop-", i+1)),
			core.WithEventHandler(n.record),
		)
		if err != nil {
			t.Fatal(err)
		}
		n.locks = locks
		c.nodes = append(c.nodes, n)
	}
	t.Cleanup(func() {
		for _, n := range c.nodes {
			c.shutdown(n)
		}
	})
	return c
}

func (n *node) record(ev core.Event) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.events = append(n.events, ev)
}

// lost returns the keys of the locks this instance reported lost.
func (n *node) lost() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	var keys []string
	for _, ev := range n.events {
		if ev.Type == core.EventLockLost {
			keys = append(keys, ev.Key)
		}
	}
	return keys
}

// running returns the instances whose clocks move.
func (c *cluster) running() []*node {
	var out []*node
	for _, n := range c.nodes {
		if !n.paused {
			out = append(out, n)
		}
	}
	return out
}

// advance moves time forward by d, a second at a time: the store's clock,
// then the clock of every running instance, so renewals fall due and reach
// the store as they would in real time.
func (c *cluster) advance(d time.Duration) {
	for step := time.Second; d > 0; d -= step {
		step = min(step, d)
		c.storeClock.Advance(step)
		for _, n := range c.running() {
			n.clock.Advance(step)
		}
	}
}

// pause stops n's clock: the process is frozen (a long GC pause, a stopped
// VM) or dead. It renews nothing and notices nothing, and fires no ticks.
func (c *cluster) pause(n *node) { n.paused = true }

// resume lets n's clock catch up with the store's: overdue renewals go out
// at once, and the store refuses those of locks that expired meanwhile.
func (c *cluster) resume(n *node) {
	n.paused = false
	n.clock.Advance(c.storeClock.Now().Sub(n.clock.Now()))
}

// fire runs one tick of a job on every running instance at once, as their
// schedulers would at the same minute, and returns each instance's result.
func (c *cluster) fire(job func(*Jobs) *core.Job) map[*node]error {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs = make(map[*node]error)
	)
	for _, n := range c.running() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := job(n.jobs).Run(context.Background())
			mu.Lock()
			errs[n] = err
			mu.Unlock()
		}()
	}
	wg.Wait()
	return errs
}

// startRun runs one tick of a job on n in the background.
func (c *cluster) startRun(n *node, job func(*Jobs) *core.Job) <-chan error {
	done := make(chan error, 1)
	go func() { done <- job(n.jobs).Run(context.Background()) }()
	return done
}

// shutdown closes n as a SIGTERM would: its jobs and elections hand over.
func (c *cluster) shutdown(n *node) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := n.locks.Close(ctx); err != nil {
		c.t.Errorf("close: %v", err)
	}
}

func isSkipped(err error) bool { return errors.Is(err, core.ErrSkipped) }

func export(j *Jobs) *core.Job    { return j.Export }
func reconcile(j *Jobs) *core.Job { return j.Reconcile }

// ran returns the instances whose tick ran, and fails the test on an
// unexpected error.
func (c *cluster) ran(errs map[*node]error) []*node {
	c.t.Helper()
	var out []*node
	for n, err := range errs {
		switch {
		case err == nil:
			out = append(out, n)
		case !isSkipped(err):
			c.t.Errorf("tick failed: %v", err)
		}
	}
	return out
}
