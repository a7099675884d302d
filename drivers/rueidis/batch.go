package rueidisstore

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/redis/rueidis"

	"github.com/leasehold/leasehold/core"
)

// MaxBatch is the most leases one RenewBatch call takes.
const MaxBatch = 1000

var _ core.BatchRenewer = (*Store)(nil)

// MaxBatch implements [core.BatchRenewer].
func (s *Store) MaxBatch() int { return MaxBatch }

// RenewBatch implements [core.BatchRenewer]: the renewal script of each
// lease, every one in a single pipeline. rueidis sends the pipeline's
// commands to the node of each key's slot, each node's in one round trip
// of its own (and one more, once per node, for the scripts it has not
// loaded yet), so the leases of one node are one group that answers or
// fails on its own. Each lease is checked and written atomically by its
// own script, as by Renew.
//
// A lease whose script failed (its node is down, its slot is moving, the
// connection broke) is unknown; the others are answered. When some
// failed, RenewBatch returns the answers with a [*core.BatchError] that
// carries each failed lease's error, so that [core.Locks] keeps the
// answered leases and retries only the failed ones: a dead node costs
// only the locks on its slots.
//
// The call answers when every group has, so a group that hangs (a node
// that stopped answering, a slot whose renewals rueidis keeps sending
// again) would hold up the answers of the others past their deadlines.
// RenewBatch therefore waits at most a quarter of the shortest ttl of
// its leases (see [groupWait]): a group that has not answered by then
// fails, and is retried on its own.
func (s *Store) RenewBatch(ctx context.Context, leases []core.Lease) ([]bool, error) {
	if err := checkCtx(ctx); err != nil {
		return nil, err
	}
	if len(leases) > MaxBatch {
		return nil, fmt.Errorf("rueidisstore: renew a batch of %d leases, more than MaxBatch %d: %w", len(leases), MaxBatch, core.ErrInvalidArgument)
	}
	renewed := make([]bool, len(leases))
	if len(leases) == 0 {
		return renewed, nil
	}
	ctx, cancel := context.WithTimeout(ctx, groupWait(leases))
	defer cancel()
	calls := make([]scriptCall, len(leases))
	for i, l := range leases {
		a := s.args(l.Key, l.TTL)
		calls[i] = scriptCall{keys: []string{a.lock, a.floor}, args: []string{l.Owner, a.ttl, a.floorTTL}}
	}
	var failed map[int]error
	var results []rueidis.RedisResult
	if s.client.Mode() == rueidis.ClientModeCluster {
		results = renewScript.runEach(ctx, s.client, calls)
	} else {
		results = renewScript.runMulti(ctx, s.client, calls)
	}
	for i, res := range results {
		n, err := res.AsInt64()
		if err != nil {
			if failed == nil {
				failed = make(map[int]error)
			}
			failed[i] = opError("renew", leases[i].Key, typed(err))
			continue
		}
		renewed[i] = n == 1
	}
	return renewed, core.NewBatchError(len(leases), failed)
}

// groupWait is how long a batch waits for its slowest group: a quarter of
// the shortest ttl among leases, so that the groups that answered are
// applied well before their deadlines (ttl less the safety margin after
// the renewal before, sent a third of the ttl earlier), and at least 1ms.
func groupWait(leases []core.Lease) time.Duration {
	shortest := leases[0].TTL
	for _, l := range leases[1:] {
		shortest = min(shortest, l.TTL)
	}
	return max(shortest/4, time.Millisecond)
}

// scriptCall is the keys and arguments of one run of a script.
type scriptCall struct{ keys, args []string }

// runEach runs the script once per call, each call on its own, all at
// once: on a Cluster, where one pipeline over every node fails whole when
// one node is dead (rueidis refreshes the cluster's topology for the
// pipeline, and the refresh waits on the dead node), while calls of their
// own fail only on their node. rueidis pipelines concurrent calls to a
// node, so this still costs about one round trip per node.
func (sc script) runEach(ctx context.Context, c rueidis.Client, calls []scriptCall) []rueidis.RedisResult {
	results := make([]rueidis.RedisResult, len(calls))
	var wg sync.WaitGroup
	for i, call := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = sc.run(ctx, c, call.keys, call.args...)
		}()
	}
	wg.Wait()
	return results
}

// runMulti runs the script once per call, in one pipeline, and sends again
// with EVAL the runs that found the script unloaded (NOSCRIPT: nothing ran).
func (sc script) runMulti(ctx context.Context, c rueidis.Client, calls []scriptCall) []rueidis.RedisResult {
	cmds := make(rueidis.Commands, len(calls))
	for i, call := range calls {
		cmds[i] = sc.evalsha(c, call.keys, call.args...)
	}
	results := c.DoMulti(ctx, cmds...)
	var again []int
	for i, res := range results {
		if noScript(res.Error()) {
			again = append(again, i)
		}
	}
	if len(again) == 0 {
		return results
	}
	cmds = cmds[:0]
	for _, i := range again {
		cmds = append(cmds, sc.eval(c, calls[i].keys, calls[i].args...))
	}
	for j, res := range c.DoMulti(ctx, cmds...) {
		results[again[j]] = res
	}
	return results
}
