package conformance

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/leasehold/leasehold/core"
)

// batchPartialCases is the part of the "batch" group that checks partial
// answers (a *core.BatchError): it needs [Options.FailGroup] to fail one
// group of a store's batch, and is skipped, saying why, without it.
//
// What the kit can see of a partial answer is the RenewBatch call itself:
// which leases came back with an answer, which with an error, and what
// the store holds afterwards. What core.Locks does with the answer (keep
// the answered leases, retry only the failed ones until their own
// deadlines) is core's, and core's own tests prove it with a fake store
// (core/batch_test.go, TestBatchPartialAnswer).
func batchPartialCases() []Case {
	return []Case{{
		Name:    "batch-partial-answer",
		Group:   "batch",
		Catches: "a RenewBatch that, when one group of a batch fails (a node, a shard, a statement), fails the whole call (a dead node then costs every lock of the batch), answers the failed group false (which loses locks still held), or returns a *core.BatchError whose errors are not one per lease at the failed leases' own input indexes (group-local indexes, say).",
		Fix:     "Answer each group that came back and return core.NewBatchError(len(leases), failed), with failed keyed by each failed lease's index in the call's input (map each group's leases back to their input indexes); never answer false for a lease whose group did not answer.",
		run:     batchPartialAnswer,
	}}
}

// partialBatchSize is how many held leases batch-partial-answer sends,
// enough for a store's groups to split them.
const partialBatchSize = 32

func batchPartialAnswer(t testing.TB, e *env) {
	b := e.batcher(t)
	if e.opts.FailGroup == nil {
		t.Skip("Options.FailGroup is not set, so the kit cannot fail one group of a batch; a store that sends a batch in groups that fail on their own (nodes, shards, statements) and answers partially with a *core.BatchError sets it to check those answers")
	}
	n := min(b.MaxBatch(), partialBatchSize)
	if n < 2 {
		t.Skipf("MaxBatch() is %d: a call of one lease is one group, answered or failed whole", b.MaxBatch())
	}
	me := e.owner("me")
	leases := make([]core.Lease, n)
	for i := range leases {
		leases[i] = core.Lease{Key: e.key(), Owner: me, TTL: holdTTL}
		e.mustAcquire(t, leases[i].Key, me, holdTTL, "no lock has ever held this key")
	}
	// The last lease's group fails: its index in the call is not its
	// index in its group (unless every lease is in that one group), so an
	// error put at a group-local index is found out.
	dead := n - 1
	restore := e.opts.FailGroup(leases[dead].Key)
	ctx, cancel := e.ctx()
	var (
		renewed []bool
		err     error
	)
	e.timed(t, func() { renewed, err = b.RenewBatch(ctx, leases) })
	cancel()
	restore()

	what := fmt.Sprintf("RenewBatch of %d held leases with the group of the last one, %s, failed by Options.FailGroup", n, show(leases[dead].Key))
	var be *core.BatchError
	switch {
	case err == nil:
		t.Fatalf("%s answered every lease with no error (lease %d: %s); the contract requires a *core.BatchError with the group's error at the failed leases: a failed group is unknown, never answered, and false would lose locks their holder still has", what, dead, answerAt(renewed, dead))
	case !errors.As(err, &be):
		t.Fatalf("%s failed the whole call: %v; the contract requires answers for the groups that came back and a *core.BatchError for the failed one, so that one dead node costs only its own locks", what, err)
	case len(renewed) != n:
		t.Fatalf("%s returned %d answers with its *core.BatchError; the contract requires one per lease, in input order (core.Locks then fails the whole call as a broken answer)", what, len(renewed))
	case len(be.Errs) != n:
		t.Fatalf("%s returned a *core.BatchError with %d errors; the contract requires one per lease, in input order (core.Locks then fails the whole call as a broken answer; core.NewBatchError builds it)", what, len(be.Errs))
	case be.Errs[dead] == nil:
		t.Fatalf("%s returned a *core.BatchError whose entry for that lease (index %d) is nil, with errors at indexes %v; the contract requires each failed lease's error at its own index in the call's input", what, dead, failedAt(be))
	}
	answered := n - len(failedAt(be))
	if answered == 0 {
		t.Fatalf("%s failed every lease (%v); the contract requires answers for the groups that came back: with %d keys, some are in other groups, unless the store sends a batch as one group (then it should not set Options.FailGroup)", what, err, n)
	}
	// Every lease was held by its owner: an answered lease is renewed.
	var wrong []string
	for i, l := range leases {
		if be.Errs[i] == nil && !renewed[i] {
			wrong = append(wrong, fmt.Sprintf("%d (%s)", i, show(l.Key)))
		}
	}
	if len(wrong) > 0 {
		t.Fatalf("%s answered false, with no error, for leases %s, whose owner holds them; the contract requires true for an answered lease that was held, and never false for a failed group's lease: false loses a lock its holder still has", what, strings.Join(wrong, ", "))
	}
	// Nothing the failed group did cost its holder the lock.
	for i, l := range leases {
		if be.Errs[i] != nil {
			e.mustRenew(t, l.Key, me, holdTTL, fmt.Sprintf("its owner holds it for %v, and a batch whose group failed must not have changed that", holdTTL))
		}
	}
}

// answerAt shows renewed[i], or says it is missing.
func answerAt(renewed []bool, i int) string {
	if i >= len(renewed) {
		return "no answer"
	}
	return fmt.Sprint(renewed[i])
}

// failedAt returns the indexes of be's failed leases.
func failedAt(be *core.BatchError) []int {
	var out []int
	for i, err := range be.Errs {
		if err != nil {
			out = append(out, i)
		}
	}
	return out
}
