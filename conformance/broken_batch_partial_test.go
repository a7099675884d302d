package conformance

import (
	"context"
	"errors"
	"hash/fnv"
	"sync"
	"testing"
	"time"

	"github.com/leasehold/leasehold/core"
)

// groupedBatch is the flawed batch store sending each batch in groups, one
// per node of a three-node "cluster" (a key's node is a hash of the key),
// whose nodes Options.FailGroup can take down. Correct (each answered
// group's leases answered, each failed one's in a *core.BatchError at its
// input index) until its flaw is set; each flaw breaks the rule of
// partial answers the way a real store could.
type groupedBatch struct {
	*flawedBatch // a client of its own, from newStore
	nodes        *nodes
	flaw         partialFlaw
}

// partialFlaw is a way to answer a batch with a failed group wrongly.
type partialFlaw int

const (
	partialFlawless    partialFlaw = iota
	partialWholeCall               // one failed group fails the whole call
	partialAnswerFalse             // a failed group's leases are answered false, with no error
	partialLocalIndex              // errors at each lease's index in its group, not in the call
	partialShortErrs               // a BatchError one entry short
	partialLastOnly                // only the call's last lease gets its group's error; the group's others are answered false
)

// nodes is the state of the three nodes, shared by every client.
type nodes struct {
	mu   sync.Mutex
	down [3]bool
}

var errNodeDown = errors.New("node down: connection refused")

func nodeOf(key string) int {
	h := fnv.New32a()
	h.Write([]byte(key))
	return int(h.Sum32() % 3)
}

// failGroup is Options.FailGroup for the store: it takes key's node down.
func (n *nodes) failGroup(key string) (restore func()) {
	node := nodeOf(key)
	n.mu.Lock()
	n.down[node] = true
	n.mu.Unlock()
	return func() {
		n.mu.Lock()
		n.down[node] = false
		n.mu.Unlock()
	}
}

func (n *nodes) state() (down [3]bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.down
}

func newGroupedBatch(clock core.Clock, flaw partialFlaw) *groupedBatch {
	return &groupedBatch{flawedBatch: &flawedBatch{flawed: newFlawed(clock, func(*flawed) {}), max: 200}, nodes: &nodes{}, flaw: flaw}
}

func (s *groupedBatch) newStore(t testing.TB) core.LockStore {
	c := *s
	c.flawedBatch = s.flawedBatch.newStore(t).(*flawedBatch)
	return &c
}

func (s *groupedBatch) RenewBatch(ctx context.Context, leases []core.Lease) ([]bool, error) {
	down := s.nodes.state()
	if down == [3]bool{} {
		return s.flawedBatch.RenewBatch(ctx, leases)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	renewed := make([]bool, len(leases))
	failed := map[int]error{}
	var inGroup [3]int // leases of each node so far: a lease's index in its group
	for i, l := range leases {
		node := nodeOf(l.Key)
		local := inGroup[node]
		inGroup[node]++
		if down[node] {
			switch s.flaw {
			case partialWholeCall:
				return nil, errNodeDown
			case partialAnswerFalse:
			case partialLocalIndex:
				failed[local] = errNodeDown
			case partialLastOnly:
				if i == len(leases)-1 {
					failed[i] = errNodeDown
				}
			default:
				failed[i] = errNodeDown
			}
			continue
		}
		var err error
		if renewed[i], err = s.Renew(ctx, l.Key, l.Owner, l.TTL); err != nil {
			return nil, err
		}
	}
	err := core.NewBatchError(len(leases), failed)
	if be := (*core.BatchError)(nil); s.flaw == partialShortErrs && errors.As(err, &be) {
		be.Errs = be.Errs[:len(be.Errs)-1]
	}
	return renewed, err
}

// runGrouped runs every case against s, with Options.FailGroup.
func runGrouped(t *testing.T, s *groupedBatch, clock *core.ManualClock) map[string]outcome {
	t.Helper()
	return runAllWith(t, s.newStore, Options{AdvanceTime: clock.Advance, ResetTokens: s.resetTokens, FailGroup: s.nodes.failGroup})
}

func TestBrokenPartialBatchesFailTheirCase(t *testing.T) {
	for _, b := range []struct {
		name string
		flaw partialFlaw
	}{
		{"one failed group fails the whole batch", partialWholeCall},
		{"a failed group answered false", partialAnswerFalse},
		{"batch errors at group-local indexes", partialLocalIndex},
		{"batch error one entry short", partialShortErrs},
		{"a failed group answered false but for one lease", partialLastOnly},
	} {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			clock := core.NewManualClock(time.Unix(1_700_000_000, 0))
			store := newGroupedBatch(clock, b.flaw)
			checkOutcomes(t, runGrouped(t, store, clock), "batch-partial-answer", nil, nil)
		})
	}
}

// TestFlawlessPartialBatchPasses is the control: the grouped store with no
// flaw passes every case, batch-partial-answer included.
func TestFlawlessPartialBatchPasses(t *testing.T) {
	clock := core.NewManualClock(time.Unix(1_700_000_000, 0))
	store := newGroupedBatch(clock, partialFlawless)
	got := runGrouped(t, store, clock)
	for name, o := range got {
		if c, _ := caseNamed(name); (c.Group == "lister" || c.Group == "notify") && o.skipped && !o.failed {
			continue // the grouped store has no List, Subscribe or TryAcquire
		}
		if o.failed || o.skipped {
			t.Errorf("flawless grouped batch store: case %s: %v", name, o)
		}
	}
	if o := got["batch-partial-answer"]; o.failed || o.skipped {
		t.Errorf("batch-partial-answer: %v", o)
	}
}

// TestPartialAnswerSkipsWithoutFailGroup: without Options.FailGroup the
// case cannot fail a group, and says so.
func TestPartialAnswerSkipsWithoutFailGroup(t *testing.T) {
	clock := core.NewManualClock(time.Unix(1_700_000_000, 0))
	store := newGroupedBatch(clock, partialWholeCall)
	c, _ := caseNamed("batch-partial-answer")
	o := runRecorded(t, c, store.newStore, Options{AdvanceTime: clock.Advance})
	if !o.skipped || o.failed {
		t.Fatalf("batch-partial-answer without FailGroup: %v; want skipped", o)
	}
}
