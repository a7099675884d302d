package core

import (
	"context"
	"fmt"
	"time"
)

// Lease is one lease of a batch renewal: the arguments of one
// [LockStore.Renew] call.
type Lease struct {
	Key   string
	Owner string
	TTL   time.Duration
}

// BatchRenewer is an optional capability of a [LockStore]: renewing many
// leases in one call, so that an instance holding thousands of locks renews
// them in a few round trips per renewal period instead of one per lock.
// [Locks] finds it by type assertion, as database/sql finds the optional
// interfaces of its drivers. When the store has it, every renewal due at
// one moment goes out through RenewBatch, in chunks of at most MaxBatch
// leases (and at most 32 chunks in flight at once); without it, each lease
// is renewed with Renew. To keep batches full, such an instance also
// renews, with the leases that are due, those due within a quarter of
// their renewal interval: locks taken at different moments soon renew
// together.
//
// The rules, on top of those of [LockStore]:
//
//   - Per lease, exactly Renew. renewed[i] is the answer Renew(ctx,
//     leases[i].Key, leases[i].Owner, leases[i].TTL) would give: true when
//     the owner held a live lock on the key and its expiry is now ttl from
//     now on the store's clock, false when it did not (the key is free,
//     expired, or held by another owner) and nothing changed. Each lease is
//     checked and written atomically, as by Renew; the batch as a whole
//     need not be atomic, and each lease may take effect at its own instant
//     within the call. A lease answered false is lost to its holder.
//   - Answers in input order: len(renewed) == len(leases), and renewed[i]
//     answers leases[i]. A key may appear more than once, with different
//     owners (at most one of which holds it); the same key and owner twice
//     get the same answer.
//   - An error fails the whole call and means that no answer is known: any
//     lease of the batch may or may not have been renewed. A store never
//     answers some leases and fails the others; [Locks] retries each lease
//     of a failed call until its own deadline, as after a failed Renew. A
//     cancelled or expired ctx is an error, as for Renew.
//   - MaxBatch is the most leases one call takes, at least 1 (a smaller
//     value is read as 1), and does not change: a store sizes it for its
//     limits (a statement's parameters or size, a script's). A call with
//     more may fail with an error matching [ErrInvalidArgument]; a call
//     with none answers an empty slice.
//
// A store may group the leases of a call as it likes (by node, by shard)
// and send the groups concurrently, as long as each lease's answer is its
// own and any failure fails the call. The conformance kit
// (github.com/leasehold/leasehold/conformance) checks these rules whenever
// a store implements the interface.
type BatchRenewer interface {
	// RenewBatch renews each lease as Renew would, and answers each, in order.
	RenewBatch(ctx context.Context, leases []Lease) (renewed []bool, err error)
	// MaxBatch returns the most leases one RenewBatch call takes.
	MaxBatch() int
}

// renewal is a lock due for renewal in one firing, with its deadline when
// the firing began.
type renewal struct {
	lk       *Lock
	deadline time.Time
}

// coalesceFraction: a store with batch renewal renews, with the locks that
// are due, those due within this fraction of their renewal interval
// (ttl/3), so that locks taken at different moments converge on a few
// renewal times. Locks renewed together are due together again, so the
// firings of one ttl stay at least ttl/12 apart: at most four a period.
const coalesceFraction = 4

// dueSoon reports whether lk, due at lk.due, is renewed by a firing at now
// of a store that renews in batches. Callers hold the scheduler's mutex.
func dueSoon(lk *Lock, now time.Time) bool {
	return !lk.due.After(now.Add(lk.ttl / 3 / coalesceFraction))
}

// renewInBatches sends renewals, sent at sent, through the store's
// RenewBatch in chunks of its MaxBatch, a few chunks at a time, and waits.
func (s *scheduler) renewInBatches(br BatchRenewer, sent time.Time, renewals []renewal) {
	size := max(br.MaxBatch(), 1)
	chunks := (len(renewals) + size - 1) / size
	parallel(chunks, maxConcurrentRenewals, func(c int) {
		s.renewChunk(br, sent, renewals[c*size:min((c+1)*size, len(renewals))])
	})
}

// renewChunk sends one RenewBatch call and hands each lock its answer.
func (s *scheduler) renewChunk(br BatchRenewer, sent time.Time, chunk []renewal) {
	leases := make([]Lease, len(chunk))
	latest := chunk[0].deadline
	for i, r := range chunk {
		leases[i] = Lease{Key: r.lk.key, Owner: r.lk.owner, TTL: r.lk.ttl}
		if r.deadline.After(latest) {
			latest = r.deadline
		}
	}
	// The call can help while any of its leases has a deadline ahead; the
	// scheduler declares each one lost at its own deadline regardless.
	ctx, cancel := renewalContext(s.ctx, sent, latest)
	// An observer sees each lease as a renewal of its own, all ending
	// with the one call.
	ends := s.observeEach(ctx, chunk)
	renewed, err := br.RenewBatch(ctx, leases)
	cancel()
	if err == nil && len(renewed) != len(leases) {
		// No answer can be trusted: treat it as a failed call.
		err = fmt.Errorf("%w: RenewBatch answered %d of %d leases", ErrBrokenStore, len(renewed), len(leases))
	}
	for i, r := range chunk {
		ok := err == nil && renewed[i]
		if ends != nil {
			ends[i](ok, err)
		}
		r.lk.afterRenewal(sent, r.deadline, ok, err)
	}
}

// observeEach starts an OpRenew per lease of chunk with the instance's
// observer, and returns their end functions; nil without an observer.
func (s *scheduler) observeEach(ctx context.Context, chunk []renewal) []func(bool, error) {
	if s.l.observer == nil {
		return nil
	}
	ends := make([]func(bool, error), len(chunk))
	for i, r := range chunk {
		_, ends[i] = s.l.observe(ctx, Op{Type: OpRenew, Key: r.lk.key, Kind: r.lk.kind})
	}
	return ends
}
