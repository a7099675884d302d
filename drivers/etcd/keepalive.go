package etcdstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// keepAlive renews leases on one keep-alive stream: it sends every request,
// then reads the answers, which the server sends in order, so that a batch
// costs one round trip. ttls[i] is the lease's granted ttl in seconds, or 0
// or less if it no longer exists. Keeping a lease alive twice is harmless,
// so a call that fails with a transient error (a leader change, an
// unreachable member) is sent again, until ctx ends.
//
// The first try has half the time ctx has left: a member that lost its
// leader after the stream opened holds the requests it has not answered
// (etcd ends such a stream only after three election timeouts without a
// leader), and the rest of the time goes to another member, which a member
// without a leader now refuses at once. Later tries have all the time
// left: a follower of a cluster that is electing a leader holds a renewal
// until there is one, then forwards it.
func (s *Store) keepAlive(ctx context.Context, ids []clientv3.LeaseID) ([]int64, error) {
	var ttls []int64
	first := true
	err := retry(ctx, func() error {
		tctx, cancel := context.WithCancel(ctx)
		if d, ok := ctx.Deadline(); ok && first {
			cancel()
			tctx, cancel = context.WithTimeout(ctx, time.Until(d)/2)
		}
		defer cancel()
		first = false
		var err error
		ttls, err = s.keepAliveOnce(tctx, ids)
		if err != nil && tctx.Err() != nil && ctx.Err() == nil {
			return status.Errorf(codes.Unavailable, "keep-alive unanswered in half its call's time: %v", err)
		}
		return err
	})
	return ttls, err
}

func (s *Store) keepAliveOnce(ctx context.Context, ids []clientv3.LeaseID) ([]int64, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // ends the stream
	stream, err := s.leases.LeaseKeepAlive(ctx)
	if err != nil {
		return nil, err
	}
	for _, id := range ids {
		if err := stream.Send(&pb.LeaseKeepAliveRequest{ID: int64(id)}); err != nil {
			if errors.Is(err, io.EOF) {
				// The server ended the stream: its status, such as a
				// member's "no leader", comes with Recv.
				_, err = stream.Recv()
			}
			return nil, err
		}
	}
	ttls := make([]int64, len(ids))
	for i, id := range ids {
		resp, err := stream.Recv()
		if err != nil {
			return nil, err
		}
		if resp.ID != int64(id) {
			return nil, fmt.Errorf("keep-alive answered lease %x for lease %x", resp.ID, int64(id))
		}
		ttls[i] = resp.TTL
	}
	return ttls, nil
}

// retry calls f until it succeeds, fails for good, or ctx ends. etcd
// answers Unavailable while it has no leader or has just changed leaders
// ("etcdserver: leader changed"), and gRPC does for a member that went
// away; the next try, a little later, goes to a member that can answer.
// f must be safe to repeat.
func retry(ctx context.Context, f func() error) error {
	wait := 25 * time.Millisecond
	for {
		err := f()
		if err == nil || status.Code(err) != codes.Unavailable || ctx.Err() != nil {
			if ctx.Err() != nil && err != nil {
				return fmt.Errorf("%w (last error: %v)", context.Cause(ctx), err)
			}
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last error: %v)", context.Cause(ctx), err)
		case <-time.After(wait):
		}
		wait = min(2*wait, 200*time.Millisecond)
	}
}
