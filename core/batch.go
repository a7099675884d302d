package core

import (
	"context"
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
// is renewed with Renew. To keep batches full, such an instance renews the
// leases of one ttl on a grid of their renewal interval, each a little
// early rather than at its own time: locks taken at different moments
// renew together from their first renewal on.
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
