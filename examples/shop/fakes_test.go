package shop

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// gate holds the calls that reach it until the test opens it, so a test can
// freeze a call at a chosen point: an upload in flight, a count just read.
type gate struct {
	arrived chan struct{}
	open    chan struct{}
}

func newGate() *gate {
	return &gate{arrived: make(chan struct{}, 100), open: make(chan struct{})}
}

// pass waits at the gate until it opens or ctx ends.
func (g *gate) pass(ctx context.Context) error {
	g.arrived <- struct{}{}
	select {
	case <-g.open:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// waitFor waits until n calls have reached the gate.
func (g *gate) waitFor(t *testing.T, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		select {
		case <-g.arrived:
		case <-time.After(10 * time.Second):
			t.Fatalf("%d of %d calls reached the gate", i, n)
		}
	}
}

func (g *gate) release() { close(g.open) }

// fakeAccounting books every batch it is sent, as the real one does.
type fakeAccounting struct {
	mu      sync.Mutex
	batches [][]string // the order ids of each booked batch
	gate    *gate      // if set, uploads wait at it
}

func (a *fakeAccounting) UploadInvoices(ctx context.Context, orders []Order) (string, error) {
	a.mu.Lock()
	g := a.gate
	a.mu.Unlock()
	if g != nil {
		if err := g.pass(ctx); err != nil {
			return "", err
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	var ids []string
	for _, o := range orders {
		ids = append(ids, o.ID)
	}
	a.batches = append(a.batches, ids)
	return fmt.Sprintf("batch-%d", len(a.batches)), nil
}

// hold makes every upload from now on wait at a new gate.
func (a *fakeAccounting) hold() *gate {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.gate = newGate()
	return a.gate
}

func (a *fakeAccounting) booked() [][]string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.batches)
}

// fakeWarehouse has shelves the test sets, counts them on request, and
// serves an alert feed.
type fakeWarehouse struct {
	mu      sync.Mutex
	shelves map[string]int64
	counts  int   // full counts run
	next    *gate // if set, the next count waits at it after reading the shelves
	feeds   map[int]func(Alert)
	feedSeq int
}

func newFakeWarehouse(shelves map[string]int64) *fakeWarehouse {
	return &fakeWarehouse{shelves: shelves, feeds: make(map[int]func(Alert))}
}

func (w *fakeWarehouse) StockCounts(ctx context.Context) ([]StockCount, error) {
	w.mu.Lock()
	w.counts++
	var counts []StockCount
	for id, n := range w.shelves {
		counts = append(counts, StockCount{ProductID: id, InStock: n})
	}
	g := w.next
	w.next = nil
	w.mu.Unlock()
	slices.SortFunc(counts, func(a, b StockCount) int { return strings.Compare(a.ProductID, b.ProductID) })
	if g != nil {
		// The count is read; the caller is frozen before it returns.
		if err := g.pass(ctx); err != nil {
			return nil, err
		}
	}
	return counts, nil
}

// holdNextCount makes the next count wait at a gate after reading the shelves.
func (w *fakeWarehouse) holdNextCount() *gate {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.next = newGate()
	return w.next
}

func (w *fakeWarehouse) set(product string, n int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.shelves[product] = n
}

func (w *fakeWarehouse) fullCounts() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.counts
}

func (w *fakeWarehouse) Alerts(ctx context.Context, fn func(Alert)) error {
	w.mu.Lock()
	w.feedSeq++
	id := w.feedSeq
	w.feeds[id] = fn
	w.mu.Unlock()
	<-ctx.Done()
	w.mu.Lock()
	delete(w.feeds, id)
	w.mu.Unlock()
	return context.Cause(ctx)
}

// connections returns how many feed connections are open.
func (w *fakeWarehouse) connections() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.feeds)
}

// notify sends an alert to every open feed connection.
func (w *fakeWarehouse) notify(a Alert) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, fn := range w.feeds {
		fn(a)
	}
}

// eventually waits until cond holds.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}
