package integration

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/redis/rueidis"
)

// errNodeDown is the error of a command sent to a node nodeFaults took down.
var errNodeDown = errors.New("test: the node serving this slot is down")

// nodeFaults is the conformance kit's Options.FailGroup for a Redis
// Cluster: FailGroup(key) takes down, for every client wrapped by wrap,
// the master that serves key's slot (every slot range it owns, by CLUSTER
// SLOTS), so that commands to it fail as commands to a dead node do, until
// the returned function brings it back. The store's batch on a Cluster
// sends each lease's script as a call of its own, so a dead node fails
// only the leases of its slots: the batch-partial-answer case checks that.
type nodeFaults struct {
	admin  rueidis.Client // a client of the cluster, for CLUSTER SLOTS
	prefix string         // the store's key prefix

	mu   sync.Mutex
	down [][2]uint16 // slot ranges of the node taken down
}

// wrap returns c, failing the commands to a node taken down.
func (f *nodeFaults) wrap(c rueidis.Client) rueidis.Client { return &faulty{Client: c, f: f} }

// failGroup is Options.FailGroup.
func (f *nodeFaults) failGroup(key string) (restore func()) {
	// The store's key is prefix{key} (key escaped, which the kit's keys do
	// not need): its slot is the key's, as rueidis computes it.
	get := f.admin.B().Get().Key(f.prefix + "{" + key + "}").Build()
	slot := get.Slot()
	ranges, err := masterRanges(f.admin, slot)
	if err != nil {
		ranges = [][2]uint16{{slot, slot}} // the key's slot alone: still a group that fails
	}
	f.mu.Lock()
	f.down = ranges
	f.mu.Unlock()
	return func() {
		f.mu.Lock()
		f.down = nil
		f.mu.Unlock()
	}
}

// masterRanges returns every slot range of the master that serves slot.
func masterRanges(c rueidis.Client, slot uint16) ([][2]uint16, error) {
	entries, err := c.Do(context.Background(), c.B().ClusterSlots().Build()).ToArray()
	if err != nil {
		return nil, fmt.Errorf("CLUSTER SLOTS: %w", err)
	}
	type rng struct {
		from, to uint16
		master   string
	}
	var all []rng
	master := ""
	for _, e := range entries {
		fields, err := e.ToArray()
		if err != nil || len(fields) < 3 {
			return nil, fmt.Errorf("CLUSTER SLOTS entry: %v", err)
		}
		from, _ := fields[0].AsInt64()
		to, _ := fields[1].AsInt64()
		node, _ := fields[2].ToArray()
		if len(node) < 2 {
			return nil, errors.New("CLUSTER SLOTS entry without a master")
		}
		host, _ := node[0].ToString()
		port, _ := node[1].AsInt64()
		r := rng{uint16(from), uint16(to), fmt.Sprintf("%s:%d", host, port)}
		all = append(all, r)
		if r.from <= slot && slot <= r.to {
			master = r.master
		}
	}
	var out [][2]uint16
	for _, r := range all {
		if r.master == master {
			out = append(out, [2]uint16{r.from, r.to})
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no master serves slot %d", slot)
	}
	return out, nil
}

// isDown reports whether slot is on the node taken down.
func (f *nodeFaults) isDown(slot uint16) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, r := range f.down {
		if r[0] <= slot && slot <= r[1] {
			return true
		}
	}
	return false
}

// faulty is a client whose commands to a node taken down fail.
type faulty struct {
	rueidis.Client
	f *nodeFaults
}

func (c *faulty) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	if c.f.isDown(cmd.Slot()) {
		return rueidis.NewErrorResult(errNodeDown)
	}
	return c.Client.Do(ctx, cmd)
}

func (c *faulty) DoMulti(ctx context.Context, cmds ...rueidis.Completed) []rueidis.RedisResult {
	results := make([]rueidis.RedisResult, len(cmds))
	var up []rueidis.Completed
	var at []int
	for i := range cmds {
		if c.f.isDown(cmds[i].Slot()) {
			results[i] = rueidis.NewErrorResult(errNodeDown)
			continue
		}
		up = append(up, cmds[i])
		at = append(at, i)
	}
	if len(up) > 0 {
		for j, res := range c.Client.DoMulti(ctx, up...) {
			results[at[j]] = res
		}
	}
	return results
}
