package etcdstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/leasehold/leasehold/core"
)

// List returns the live locks whose key starts with prefix, ordered by key
// (etcd orders keys byte by byte). It reads the keys in one request, then
// asks each lock's lease for its time left, one request each: it is meant
// for tools, not for hot paths. A lock whose lease ends between the two is
// left out.
func (s *Store) List(ctx context.Context, prefix string) ([]core.LockInfo, error) {
	ctx, err := s.usable(ctx)
	if err != nil {
		return nil, err
	}
	resp, err := s.kv.Get(ctx, s.prefix+prefix, clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByKey, clientv3.SortAscend))
	if err != nil {
		return nil, fmt.Errorf("etcdstore: list %q: %w", prefix, err)
	}
	locks := make([]core.LockInfo, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		if kv.Lease == 0 {
			continue // not written by this store
		}
		ttl, err := s.cli.TimeToLive(ctx, clientv3.LeaseID(kv.Lease))
		if errors.Is(err, rpctypes.ErrLeaseNotFound) || (err == nil && ttl.TTL <= 0) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("etcdstore: list %q: %w", prefix, err)
		}
		locks = append(locks, core.LockInfo{
			Key:       string(kv.Key[len(s.prefix):]),
			Owner:     string(kv.Value),
			Token:     kv.CreateRevision,
			ExpiresIn: time.Duration(ttl.TTL) * time.Second,
		})
	}
	return locks, nil
}
