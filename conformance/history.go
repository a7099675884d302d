package conformance

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/leasehold/leasehold/core"
)

// A history records every store call of a race case: who called what, when
// it was invoked and when it returned, and the answer. check then asks a
// linearizability checker (porcupine) whether some order of the calls, each
// taking effect at one instant between its invocation and its return,
// explains every answer under the sequential model of the contract
// (lockModel). A race that a winner count misses (a Renew or Release that
// checks and then writes, a takeover that lets an old owner's renewal
// through) fails the case, with the calls on the offending key printed.
type history struct {
	// clocks reads the store's clock, as the case moves it (see
	// env.clocks): the time since the case began, and how far ahead of
	// that the store's clock may read (the wall clock, stepped; a move of
	// a manual clock in progress).
	clocks func() (now, ahead time.Duration)
	// late is how long after its ttl the store may still hold a lock of
	// that ttl (core.ExpiryLateness of the store under test); nil for 0.
	late func(ttl time.Duration) time.Duration
	// lateFrees: an Acquire refused after the lock on its key expired is
	// legal however late, for a case that times the frees itself. Only
	// refusals widen: a renewal, a release or a grant is judged as ever.
	lateFrees bool
	seq       atomic.Int64 // orders invocations and returns

	mu    sync.Mutex
	ops   []porcupine.Operation
	apart time.Duration // the most the two clocks disagreed at a call's start or end
}

// call is one recorded store call.
type call struct {
	op    string // "acquire", "renew", "release"
	key   string
	owner string
	ttl   time.Duration
	// from and to bound, on the store's clock, the instant at which the
	// call took effect: it was invoked at from and returned at to (see
	// span).
	from, to time.Duration
	// late is how long after ttl the store may still hold the lock this
	// call set (the store's declared expiry precision).
	late time.Duration
	// lateFree: the call is an Acquire that may be refused while an
	// expired lock holds the key (see history.lateFrees).
	lateFree bool
}

// lateness returns how late the store may free a lock of ttl.
func (h *history) lateness(ttl time.Duration) time.Duration {
	if h.late == nil {
		return 0
	}
	return h.late(ttl)
}

// answer is a recorded call's outcome.
type answer struct {
	token int64
	ok    bool
	err   error
}

// recording is the store a race case calls: it forwards to the store under
// test and records the calls in h.
type recording struct {
	core.LockStore
	h *history
}

func (h *history) record(c call, do func() answer) answer {
	c.late, c.lateFree = h.lateness(c.ttl), h.lateFrees
	now0, ahead0 := h.clocks()
	start := h.seq.Add(1)
	a := do()
	end := h.seq.Add(1)
	now1, ahead1 := h.clocks()
	var apart time.Duration
	c.from, c.to, apart = span(now0, ahead0, now1, ahead1)
	h.mu.Lock()
	h.ops = append(h.ops, porcupine.Operation{Input: c, Call: start, Output: a, Return: end})
	h.apart = max(h.apart, apart)
	h.mu.Unlock()
	return a
}

// span returns the bounds, on the store's clock, of a call made between
// two readings of the clocks. In real time, a store times its leases by the
// monotonic clock or by the wall clock (a database's now()), and the two
// agree until the wall clock is stepped or slewed; then the store's reading
// lies between the monotonic one and the wall clock's, as it was at the
// call's start or at its end. So the bounds cover both clocks: a store
// that times by either is judged by its own. With AdvanceTime, the store's
// clock may read a move in progress ahead; the bounds may then be wider
// than they need be, never narrower. apart is how far the clocks
// disagreed at either reading.
func span(now0, ahead0, now1, ahead1 time.Duration) (from, to, apart time.Duration) {
	return now0 + min(0, ahead0, ahead1), now1 + max(0, ahead0, ahead1), max(ahead0, -ahead0, ahead1, -ahead1)
}

func (r recording) Acquire(ctx context.Context, key, owner string, ttl time.Duration) (int64, bool, error) {
	a := r.h.record(call{op: "acquire", key: key, owner: owner, ttl: ttl}, func() answer {
		token, ok, err := r.LockStore.Acquire(ctx, key, owner, ttl)
		return answer{token, ok, err}
	})
	return a.token, a.ok, a.err
}

func (r recording) Renew(ctx context.Context, key, owner string, ttl time.Duration) (bool, error) {
	a := r.h.record(call{op: "renew", key: key, owner: owner, ttl: ttl}, func() answer {
		ok, err := r.LockStore.Renew(ctx, key, owner, ttl)
		return answer{ok: ok, err: err}
	})
	return a.ok, a.err
}

func (r recording) Release(ctx context.Context, key, owner string) (bool, error) {
	a := r.h.record(call{op: "release", key: key, owner: owner}, func() answer {
		ok, err := r.LockStore.Release(ctx, key, owner)
		return answer{ok: ok, err: err}
	})
	return a.ok, a.err
}

// recordingBatch is recording for a store with batch renewal: each lease
// of a RenewBatch call is recorded as a Renew call of its own, invoked
// before the batch was sent and returned after its answer.
type recordingBatch struct {
	recording
	b core.BatchRenewer
}

func (r recordingBatch) MaxBatch() int { return r.b.MaxBatch() }

func (r recordingBatch) RenewBatch(ctx context.Context, leases []core.Lease) ([]bool, error) {
	h := r.h
	now0, ahead0 := h.clocks()
	calls := make([]int64, len(leases))
	for i := range leases {
		calls[i] = h.seq.Add(1)
	}
	renewed, err := r.b.RenewBatch(ctx, leases)
	now1, ahead1 := h.clocks()
	from, to, apart := span(now0, ahead0, now1, ahead1)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.apart = max(h.apart, apart)
	for i, l := range leases {
		a := answer{ok: i < len(renewed) && renewed[i], err: err}
		if err == nil && len(renewed) != len(leases) {
			a.err = fmt.Errorf("%d answers for %d leases", len(renewed), len(leases))
		}
		c := call{op: "renew", key: l.Key, owner: l.Owner, ttl: l.TTL, from: from, to: to, late: h.lateness(l.TTL)}
		h.ops = append(h.ops, porcupine.Operation{Input: c, Call: calls[i], Output: a, Return: h.seq.Add(1)})
	}
	return renewed, err
}

// wrap returns store recording its calls into h, with batch renewal if
// the store has it.
func (h *history) wrap(store core.LockStore) core.LockStore {
	r := recording{LockStore: store, h: h}
	if b, ok := store.(core.BatchRenewer); ok {
		return recordingBatch{r, b}
	}
	return r
}

// lockState is the model's view of one key.
type lockState struct {
	owner string // "" when no lock holds the key
	token int64  // the greatest token the key was granted: the floor
	// The holder's lock expires at an instant of the store's clock between
	// expFrom and expTo: ttl after the instant its Acquire or last Renew
	// took effect, which the history knows only within that call's bounds,
	// plus, for expTo only, the store's declared lateness. A store may free
	// a lock late by what it declares, never early: the lateness widens
	// only the side on which the lock is still held.
	expFrom, expTo time.Duration
}

// expiryTolerance widens what counts as "maybe expired" for stores that
// round the ttl or the clock to whole milliseconds.
const expiryTolerance = 2 * time.Millisecond

// set returns the state of a lock that c (an Acquire or Renew) set.
func set(owner string, token int64, c call) lockState {
	return lockState{owner: owner, token: token, expFrom: c.from + c.ttl, expTo: c.to + c.ttl + c.late}
}

// live says whether the key's lock was live at the instant c took effect:
// surely (yes), surely not (no), or it may have been either (both false).
func (s lockState) live(c call) (yes, no bool) {
	if s.owner == "" {
		return false, true
	}
	return c.to < s.expFrom-expiryTolerance, c.from >= s.expTo+expiryTolerance
}

// lockModel is the contract as a sequential specification, per key: at most
// one live holder; Acquire takes a key no live lock holds, with a token
// greater than every token the key had, and is refused while one does;
// Renew and Release succeed for the live holder only; a lock expires ttl
// after its Acquire or last Renew, on the store's clock.
var lockModel = porcupine.Model{
	Partition: func(ops []porcupine.Operation) [][]porcupine.Operation {
		byKey := map[string][]porcupine.Operation{}
		var keys []string
		for _, op := range ops {
			k := op.Input.(call).key
			if _, seen := byKey[k]; !seen {
				keys = append(keys, k)
			}
			byKey[k] = append(byKey[k], op)
		}
		out := make([][]porcupine.Operation, 0, len(keys))
		for _, k := range keys {
			out = append(out, byKey[k])
		}
		return out
	},
	Init: func() any { return lockState{} },
	Step: func(state, input, output any) (bool, any) {
		s, c, a := state.(lockState), input.(call), output.(answer)
		yes, no := s.live(c)
		holder := s.owner == c.owner && s.owner != ""
		switch c.op {
		case "acquire":
			if !a.ok {
				// Refused: a live lock must (maybe) hold it, or an
				// expired one the store may still be freeing.
				return !no || c.lateFree && s.owner != "", s
			}
			if yes || a.token <= s.token {
				return false, s
			}
			return true, set(c.owner, a.token, c)
		case "renew", "release":
			if a.ok {
				if !holder || no {
					return false, s
				}
				if c.op == "release" {
					return true, lockState{token: s.token}
				}
				return true, set(s.owner, s.token, c)
			}
			if holder && yes {
				return false, s // refused to the live holder
			}
			if holder {
				// Refused to its holder: the lock had expired by then.
				s.expTo = min(s.expTo, c.to)
			}
			return true, s
		}
		return false, s
	},
	DescribeOperation: func(input, output any) string { return describeCall(input.(call), output.(answer)) },
	DescribeState: func(state any) string {
		s := state.(lockState)
		if s.owner == "" {
			return fmt.Sprintf("free (floor %d)", s.token)
		}
		return fmt.Sprintf("held by %s, token %d, expires between %v and %v", s.owner, s.token, s.expFrom, s.expTo)
	},
}

func describeCall(c call, a answer) string {
	var in, out string
	switch c.op {
	case "acquire":
		in = fmt.Sprintf("Acquire(%s, %v)", c.owner, c.ttl)
		out = "not acquired"
		if a.ok {
			out = fmt.Sprintf("token %d", a.token)
		}
	case "renew":
		in, out = fmt.Sprintf("Renew(%s, %v)", c.owner, c.ttl), fmt.Sprint(a.ok)
	default:
		in, out = fmt.Sprintf("Release(%s)", c.owner), fmt.Sprint(a.ok)
	}
	if a.err != nil {
		out = "error: " + a.err.Error()
	}
	return in + " → " + out
}

// historyTimeout bounds the checker; histories of the kit's sizes take
// milliseconds.
const historyTimeout = 30 * time.Second

// check fails t if the recorded history is not linearizable under
// lockModel, and prints the calls on each offending key in the order they
// were invoked. Calls that failed with an error are left out (the case
// fails on them anyway).
func (h *history) check(t testing.TB) {
	t.Helper()
	h.mu.Lock()
	ops := slices.DeleteFunc(slices.Clone(h.ops), func(op porcupine.Operation) bool { return op.Output.(answer).err != nil })
	apart := h.apart
	h.mu.Unlock()
	clocks := ""
	if apart >= time.Millisecond {
		clocks = fmt.Sprintf("\nThe store's clock may have read up to %v away from the kit's during the case (the wall clock stepped or slewed, or a move of the clock in progress); each call's bounds above cover that.", apart)
	}
	illegal := 0
	for _, part := range lockModel.Partition(ops) {
		switch porcupine.CheckOperationsTimeout(lockModel, part, historyTimeout) {
		case porcupine.Illegal:
			if illegal++; illegal > 3 {
				continue // three keys show the flaw
			}
			t.Errorf("no order of these calls on %s, each taking effect at one instant between its call and its return, is legal under the store contract (at most one live holder; Acquire only of a key no live lock holds, with a greater token; Renew and Release only by the live holder; expiry ttl after the last Acquire or Renew); times are on the store's clock, from the start of the case:\n%s",
				show(part[0].Input.(call).key), describeHistory(part)+clocks)
		case porcupine.Unknown:
			t.Logf("the linearizability check of %d calls on %s timed out after %v", len(part), show(part[0].Input.(call).key), historyTimeout)
		}
	}
	if illegal > 3 {
		t.Errorf("and %d more keys whose calls no legal order explains", illegal-3)
	}
}

// describeHistory lists ops in the order they were invoked.
func describeHistory(ops []porcupine.Operation) string {
	ops = slices.SortedFunc(slices.Values(ops), func(a, b porcupine.Operation) int { return cmp.Compare(a.Call, b.Call) })
	var b strings.Builder
	for _, op := range ops {
		c := op.Input.(call)
		fmt.Fprintf(&b, "  [%v … %v] %s\n", c.from, c.to, describeCall(c, op.Output.(answer)))
	}
	return b.String()
}
