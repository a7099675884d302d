package integration

import (
	"context"
	"crypto/rand"
	"sync/atomic"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"

	etcdstore "github.com/leasehold/leasehold/drivers/etcd"
	"github.com/leasehold/leasehold/internal/testserver/etcdserver"
)

// TestLeaseNeverShorterThanTTL reads the lease each acquisition and
// renewal leaves on the key: never shorter than the ttl asked for (the
// kit's expiry cases allow ttl/6 on either side and cannot see a lease
// rounded down by less), and a renewal with another ttl, shorter or
// longer, moves the key to a lease of that ttl with the same token.
func TestLeaseNeverShorterThanTTL(t *testing.T) {
	cli := newClient(t, etcdserver.Endpoints(t))
	prefix := "lease-test-" + rand.Text()[:8] + "/"
	s := etcdstore.NewWithOptions(cli, etcdstore.Options{Prefix: prefix})
	ctx := context.Background()
	granted := func(key string) (time.Duration, int64) {
		t.Helper()
		resp, err := cli.Get(ctx, prefix+key)
		if err != nil || len(resp.Kvs) != 1 {
			t.Fatalf("Get %s: %v, %v", key, resp, err)
		}
		ttl, err := cli.TimeToLive(ctx, clientv3.LeaseID(resp.Kvs[0].Lease))
		if err != nil {
			t.Fatal(err)
		}
		return time.Duration(ttl.GrantedTTL) * time.Second, resp.Kvs[0].CreateRevision
	}
	for _, ttl := range []time.Duration{time.Millisecond, 999 * time.Millisecond, 2 * time.Second, 2500 * time.Millisecond, 3 * time.Second, 11900 * time.Millisecond, time.Minute} {
		key := "k-" + ttl.String()
		token, ok, err := s.Acquire(ctx, key, "o", ttl)
		if err != nil || !ok {
			t.Fatalf("Acquire(%v) = %v, %v", ttl, ok, err)
		}
		g, rev := granted(key)
		if g < ttl || rev != token {
			t.Errorf("Acquire(%v): lease of %v, create revision %d, token %d; want a lease of at least the ttl, the token the create revision", ttl, g, rev, token)
		}
		for _, next := range []time.Duration{ttl / 2, 2 * ttl} {
			if ok, err := s.Renew(ctx, key, "o", next); err != nil || !ok {
				t.Fatalf("Renew(%v) = %v, %v", next, ok, err)
			}
			g, rev := granted(key)
			if g < next || g > max(next+time.Second+100*time.Millisecond, 2*time.Second) || rev != token {
				t.Errorf("Renew(%v) after Acquire(%v): lease of %v, create revision %d; want at least %v, at most a second more (or the 2s minimum), token %d", next, ttl, g, rev, next, token)
			}
		}
		if ok, err := s.Release(ctx, key, "o"); err != nil || !ok {
			t.Fatalf("Release = %v, %v", ok, err)
		}
	}
}

// TestAcquireAfterItsLeaseExpired holds up an Acquire between its lease's
// grant and its transaction until the lease is gone (revoked here, as
// etcd's expiry would after a pause of the calling process or a stalled
// connection longer than the lease): the transaction is refused as a
// whole, so nothing was taken, and Acquire must take the key on a new
// lease rather than fail with an error (which core reads as an outcome it
// cannot know, and hands back). The kit's steer-acquire-takeover found it,
// stopping an Acquire at that point until its lease expired.
func TestAcquireAfterItsLeaseExpired(t *testing.T) {
	endpoints := etcdserver.Endpoints(t)
	admin := newClient(t, endpoints)
	var held atomic.Int64 // Txns held up
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   endpoints,
		DialTimeout: 5 * time.Second,
		DialOptions: []grpc.DialOption{grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
			if txn, ok := req.(*etcdserverpb.TxnRequest); ok && len(txn.Success) > 0 && held.Add(1) == 1 {
				if put := txn.Success[0].GetRequestPut(); put != nil && put.Lease != 0 {
					if _, err := admin.Revoke(ctx, clientv3.LeaseID(put.Lease)); err != nil {
						return err
					}
				}
			}
			return invoker(ctx, method, req, reply, cc, opts...)
		})},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	prefix := "lease-expired-" + rand.Text()[:8] + "/"
	acquireOnNewLease(t, cli, admin, prefix, 5*time.Second, &held, "before its transaction")
}

// acquireOnNewLease acquires key "k" under prefix for owner "o", with ttl,
// through cli, whose interceptor holds up a transaction (held counts
// them), and requires Acquire to have taken the key on a new lease of that
// ttl, its token the key's create revision. when says when the held-up
// acquisition's lease expired.
func acquireOnNewLease(t *testing.T, cli, admin *clientv3.Client, prefix string, ttl time.Duration, held *atomic.Int64, when string) {
	t.Helper()
	s := etcdstore.NewWithOptions(cli, etcdstore.Options{Prefix: prefix})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	token, ok, err := s.Acquire(ctx, "k", "o", ttl)
	if err != nil || !ok {
		t.Fatalf("Acquire whose lease expired %s = %v, %v; want acquired on a new lease", when, ok, err)
	}
	if held.Load() < 2 {
		t.Fatalf("the interceptor saw %d transactions; the test did not hold one up", held.Load())
	}
	resp, err := admin.Get(ctx, prefix+"k")
	if err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "o" || resp.Kvs[0].CreateRevision != token {
		t.Fatalf("after Acquire: key %v, %v; want it held by o with token %d", resp, err, token)
	}
	lease, err := admin.TimeToLive(ctx, clientv3.LeaseID(resp.Kvs[0].Lease))
	if err != nil || time.Duration(lease.TTL)*time.Second < ttl-time.Second {
		t.Fatalf("the key's lease: %v, %v; want one of the ttl asked for, %v", lease, err, ttl)
	}
}

// TestAcquireWhoseLeaseExpiredAfterItsTransaction holds up the reply of an
// Acquire's transaction, which took the key, until past the lease's slack,
// and revokes the lease meanwhile (as etcd's expiry would, on a leader so
// slow that the grant and the transaction took longer than the lease): the
// key went with the lease, so nothing is held and the key is free. Acquire
// must take it on a new lease; it answered "not acquired", which says
// someone else holds the key, and failed the kit's race-takeover-expired-
// key on a free key under a busy loop per core.
func TestAcquireWhoseLeaseExpiredAfterItsTransaction(t *testing.T) {
	endpoints := etcdserver.Endpoints(t)
	admin := newClient(t, endpoints)
	var held atomic.Int64               // Txns held up
	const ttl = 2900 * time.Millisecond // a lease of 3s: 100ms of slack
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   endpoints,
		DialTimeout: 5 * time.Second,
		DialOptions: []grpc.DialOption{grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
			err := invoker(ctx, method, req, reply, cc, opts...)
			if txn, ok := req.(*etcdserverpb.TxnRequest); ok && err == nil && len(txn.Success) > 0 && held.Add(1) == 1 {
				if put := txn.Success[0].GetRequestPut(); put != nil && put.Lease != 0 {
					if _, err := admin.Revoke(ctx, clientv3.LeaseID(put.Lease)); err != nil {
						return err
					}
				}
				time.Sleep(200 * time.Millisecond) // the reply, held up past the lease's slack
			}
			return err
		})},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	prefix := "lease-expired-after-" + rand.Text()[:8] + "/"
	acquireOnNewLease(t, cli, admin, prefix, ttl, &held, "after its transaction")
}
