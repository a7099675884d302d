package shop

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/leasehold/leasehold/core"
	"github.com/leasehold/leasehold/core/coretest"
	_ "modernc.org/sqlite" // the "sqlite" database/sql driver
)

var start = time.Date(2026, 3, 2, 1, 59, 0, 0, time.UTC)

// openDB returns the shop's database, a SQLite file with three orders to
// invoice and three products on the shelves.
func openDB(t *testing.T) *sql.DB {
	t.Helper()
	path := filepath.Join(t.TempDir(), "shop.db")
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	ctx := context.Background()
	if err := Migrate(ctx, db); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`INSERT INTO orders (id, total_cents) VALUES ('ord-1001', 2599), ('ord-1002', 1250), ('ord-1003', 4800)`,
		`INSERT INTO stock (product_id, in_stock) VALUES ('salmon-kibble', 0), ('catnip', 0), ('litter', 0)`,
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	return db
}

func addOrder(t *testing.T, db *sql.DB, id string) {
	t.Helper()
	if _, err := db.Exec(`INSERT INTO orders (id, total_cents) VALUES ($1, 1000)`, id); err != nil {
		t.Fatal(err)
	}
}

func inStock(t *testing.T, db *sql.DB, product string) int64 {
	t.Helper()
	var n int64
	if err := db.QueryRow(`SELECT in_stock FROM stock WHERE product_id = $1`, product).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// newShops returns n instances of the shop on one database, as in
// production: each instance its own process, all of them sharing the
// database, the accounting system and the warehouse.
func newShops(t *testing.T, n int) ([]*Shop, *fakeAccounting, *fakeWarehouse, *coretest.LogBuffer) {
	db := openDB(t)
	accounting := &fakeAccounting{}
	warehouse := newFakeWarehouse(map[string]int64{"salmon-kibble": 12, "catnip": 30, "litter": 7})
	logs := &coretest.LogBuffer{}
	var shops []*Shop
	for i := range n {
		shops = append(shops, &Shop{
			DB:         db,
			Accounting: accounting,
			Warehouse:  warehouse,
			Log:        logs.Logger().With("instance", fmt.Sprint("shop-", i+1)),
		})
	}
	return shops, accounting, warehouse, logs
}

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
// n's clock moves while it closes, since a job's lease is kept for a second
// after its last run started.
func (c *cluster) shutdown(n *node) {
	c.t.Helper()
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		done <- n.locks.Close(ctx)
	}()
	for {
		select {
		case err := <-done:
			if err != nil {
				c.t.Errorf("close: %v", err)
			}
			return
		case <-time.After(time.Millisecond):
			n.clock.Advance(10 * time.Millisecond)
		}
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
