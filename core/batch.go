package core

import (
	"context"
	"errors"
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
//   - An error fails the call and means that no answer is known: any
//     lease of the batch may or may not have been renewed. [Locks]
//     retries each lease of a failed call until its own deadline, as
//     after a failed Renew. A cancelled or expired ctx is an error, as for
//     Renew.
//   - Partial answers. A store that sends the leases of a call in groups
//     that fail on their own (one per node of a cluster, per shard, per
//     statement) answers the groups that came back and fails only the
//     others: it returns renewed, with an answer for every lease of a
//     group that came back, and a [*BatchError] (errors.As finds it
//     through wrapping) whose Errs holds, per lease in input order, nil
//     for an answered lease and the group's error for a failed one. A
//     failed lease is unknown, exactly as after a failed call, and is
//     retried on its own until its own deadline; an answered one counts as
//     Renew's answer. A failed group is never answered as "not renewed":
//     false means the store decided, and loses the lock at once. A
//     *BatchError whose Errs or renewed does not have one entry per lease
//     fails the whole call, as a broken answer.
//   - MaxBatch is the most leases one call takes, at least 1 (a smaller
//     value is read as 1), and does not change: a store sizes it for its
//     limits (a statement's parameters or size, a script's). A call with
//     more may fail with an error matching [ErrInvalidArgument]; a call
//     with none answers an empty slice.
//
// A store may group the leases of a call as it likes (by node, by shard)
// and send the groups concurrently, as long as each lease's answer is its
// own and a failed group fails the call, or, with a [*BatchError], its
// own leases only. The conformance kit
// (github.com/leasehold/leasehold/conformance) checks these rules whenever
// a store implements the interface.
type BatchRenewer interface {
	// RenewBatch renews each lease as Renew would, and answers each, in order.
	RenewBatch(ctx context.Context, leases []Lease) (renewed []bool, err error)
	// MaxBatch returns the most leases one RenewBatch call takes.
	MaxBatch() int
}

// BatchError is the error of a [BatchRenewer.RenewBatch] call that
// answered some of its leases and failed others: the leases of a node
// that did not answer, say, while the other nodes did. Errs has one entry
// per lease of the call, in order: nil where the lease was answered (its
// answer is in the call's renewed), the error of its group where it was
// not (it may or may not have been renewed). [Locks] keeps the leases
// answered and retries the failed ones until their own deadlines.
type BatchError struct {
	Errs []error
}

// NewBatchError returns the error of a call over n leases whose answers
// failed at the indexes of failed, each with its error: nil when failed is
// empty, so that a store can return its result as the call's error.
func NewBatchError(n int, failed map[int]error) error {
	if len(failed) == 0 {
		return nil
	}
	errs := make([]error, n)
	for i, err := range failed {
		if i >= 0 && i < n {
			errs[i] = err
		}
	}
	return &BatchError{Errs: errs}
}

// Error counts the failed leases and quotes the first error.
func (e *BatchError) Error() string {
	failed, first := 0, error(nil)
	for _, err := range e.Errs {
		if err != nil {
			failed++
			if first == nil {
				first = err
			}
		}
	}
	if first == nil {
		return fmt.Sprintf("leasehold: batch of %d leases: none failed", len(e.Errs))
	}
	return fmt.Sprintf("leasehold: %d of %d leases of the batch failed: %v", failed, len(e.Errs), first)
}

// Unwrap returns the distinct errors of the failed leases, so that
// errors.Is finds, say, a connection error of one group.
func (e *BatchError) Unwrap() []error {
	var out []error
	for _, err := range e.Errs {
		if err != nil && (len(out) == 0 || out[len(out)-1] != err) {
			out = append(out, err)
		}
	}
	return out
}

// batchAnswers reads a RenewBatch answer for n leases: per lease, whether
// it was renewed and the error it failed with. An error that is not a
// [*BatchError] fails every lease; so does an answer of the wrong length.
func batchAnswers(n int, renewed []bool, err error) (ok []bool, errs []error) {
	ok, errs = make([]bool, n), make([]error, n)
	var be *BatchError
	switch {
	case err != nil && !errors.As(err, &be):
	case len(renewed) != n:
		err = fmt.Errorf("%w: RenewBatch answered %d of %d leases", ErrBrokenStore, len(renewed), n)
	case be != nil && len(be.Errs) != n:
		err = fmt.Errorf("%w: RenewBatch's BatchError holds %d errors for %d leases", ErrBrokenStore, len(be.Errs), n)
	default:
		for i := range n {
			if be != nil && be.Errs[i] != nil {
				errs[i] = be.Errs[i]
			} else {
				ok[i] = renewed[i]
			}
		}
		return ok, errs
	}
	for i := range errs {
		errs[i] = err
	}
	return ok, errs
}
