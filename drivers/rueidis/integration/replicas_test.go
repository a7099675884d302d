package integration

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/leasehold/leasehold/core/coretest"
	rueidisstore "github.com/leasehold/leasehold/drivers/rueidis"
	"github.com/leasehold/leasehold/internal/testserver"
)

// TestWithReplicasNone: with no replica to acknowledge it, an acquisition
// is reported as ErrNotReplicated, and core.Locks releases it again.
func TestWithReplicasNone(t *testing.T) {
	srv := testserver.PrivateRedis(t)
	s := newStore(t, srv.DSN, prefix, rueidisstore.WithReplicas(1, 50*time.Millisecond))
	token, ok, err := s.Acquire(context.Background(), "k", "a", time.Minute)
	if !errors.Is(err, rueidisstore.ErrNotReplicated) || ok || token != 0 {
		t.Fatalf("Acquire without a replica = %d, %v, %v; want an ErrNotReplicated error", token, ok, err)
	}
	if ok, err := s.Release(context.Background(), "k", "a"); !ok || err != nil {
		t.Fatalf("Release after ErrNotReplicated = %v, %v; want the key taken, so released", ok, err)
	}
	locks := coretest.NewLocks(t, s)
	if _, err := locks.Acquire(context.Background(), "k"); !errors.Is(err, rueidisstore.ErrNotReplicated) {
		t.Fatalf("Locks.Acquire without a replica: %v; want ErrNotReplicated", err)
	}
	// Released by core.Locks, not left to expire: another owner takes it at once.
	mustAcquire(t, newStore(t, srv.DSN, prefix), "k", "b", time.Minute)
	// A failed try sends no WAIT, so it does not wait for the timeout.
	_, ok, err = s.Acquire(context.Background(), "k", "c", time.Minute)
	if err != nil || ok {
		t.Fatalf("Acquire of a held key = %v, %v; want not acquired, no error", ok, err)
	}
}

// TestWithReplicasAcknowledged: with a replica attached, the acquisition
// succeeds and the replica has the lock.
func TestWithReplicasAcknowledged(t *testing.T) {
	primary := testserver.PrivateRedis(t)
	replica := testserver.PrivateRedisReplica(t, primary)
	s := newStore(t, primary.DSN, prefix, rueidisstore.WithReplicas(1, 5*time.Second))
	mustAcquire(t, s, "k", "a", time.Minute)
	if owner, err := redisDo(t, replica.DSN, "HGET", prefix+"{k}", "o").ToString(); err != nil || owner != "a" {
		t.Fatalf("HGET on the replica = %q, %v; want the owner a", owner, err)
	}
}

func TestWithReplicasOptions(t *testing.T) {
	srv := testserver.PrivateRedis(t)
	client := newClient(t, srv.DSN)
	for _, opt := range []rueidisstore.Option{
		rueidisstore.WithReplicas(-1, time.Second),
		rueidisstore.WithReplicas(1, 0), // WAIT 0 would wait forever
		rueidisstore.WithFloorRetention(-time.Second),
		rueidisstore.WithFloorRetention(time.Microsecond),
		rueidisstore.WithPrefix(""),
		rueidisstore.WithPrefix("a{b}"),
	} {
		if _, err := rueidisstore.New(client, opt); err == nil {
			t.Errorf("New accepted a bad option")
		}
	}
}
