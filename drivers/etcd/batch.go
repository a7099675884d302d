package etcdstore

import (
	"context"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/leasehold/leasehold/core"
)

// maxBatch bounds a RenewBatch call: the leases of one call are kept alive
// on one stream, one request each, pipelined.
const maxBatch = 1000

// MaxBatch returns the most leases one RenewBatch call takes.
func (s *Store) MaxBatch() int { return maxBatch }

// RenewBatch renews each lease as [Store.Renew] would. The leases are kept
// alive on one keep-alive stream (one round trip for the batch); a lock
// this store did not acquire is looked up first, and a lease renewed with
// another ttl than its own moves to a new lease, one lock at a time.
func (s *Store) RenewBatch(ctx context.Context, leases []core.Lease) ([]bool, error) {
	ctx, err := s.usable(ctx)
	if err != nil {
		return nil, err
	}
	if len(leases) > maxBatch {
		return nil, fmt.Errorf("etcdstore: RenewBatch of %d leases, at most %d: %w", len(leases), maxBatch, core.ErrInvalidArgument)
	}
	renewed := make([]bool, len(leases))
	held := make([]heldLease, len(leases))
	ids := make([]clientv3.LeaseID, 0, len(leases))
	at := make([]int, 0, len(leases)) // lease index of ids[j]
	var move []int                    // leases to move to a lease of their ttl
	for i, l := range leases {
		h, ok, err := s.leaseOf(ctx, l.Key, l.Owner)
		if err != nil {
			return nil, fmt.Errorf("etcdstore: renew batch: %w", err)
		}
		if ok && (h.ttl == 0 || h.ttl == s.grantedSeconds(l.TTL)) {
			held[i] = h
			ids = append(ids, h.id)
			at = append(at, i)
		}
		if ok && h.ttl != 0 && h.ttl != s.grantedSeconds(l.TTL) {
			held[i] = h
			move = append(move, i)
		}
	}
	if len(ids) > 0 {
		ttls, err := s.keepAlive(ctx, ids)
		if err != nil {
			return nil, fmt.Errorf("etcdstore: renew batch: %w", err)
		}
		for j, i := range at {
			l := leases[i]
			switch {
			case ttls[j] <= 0:
				s.forget(l.Key, l.Owner)
			case ttls[j] == s.grantedSeconds(l.TTL):
				renewed[i] = true
			default:
				move = append(move, i)
			}
		}
	}
	// A lease of another ttl moves to a new lease, one at a time.
	for _, i := range move {
		l := leases[i]
		ok, err := s.moveLease(ctx, l.Key, l.Owner, held[i].id, l.TTL)
		if err != nil {
			return nil, fmt.Errorf("etcdstore: renew batch, %q with a new ttl: %w", l.Key, err)
		}
		renewed[i] = ok
	}
	return renewed, nil
}
