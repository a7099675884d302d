package integration

import (
	"context"
	"crypto/rand"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

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
