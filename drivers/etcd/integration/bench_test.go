package integration

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"google.golang.org/grpc"

	"github.com/leasehold/leasehold/core"
	"github.com/leasehold/leasehold/core/coretest"
	etcdstore "github.com/leasehold/leasehold/drivers/etcd"
	"github.com/leasehold/leasehold/internal/testserver/etcdserver"
)

// countingClient is an etcd client that counts in n the requests it
// sends: unary calls, and messages sent on streams (a keep-alive is one);
// and, if trips is not nil, its round trips: unary calls, and streams
// opened (the store pipelines the keep-alives of a batch on one stream).
func countingClient(b *testing.B, endpoints []string, n, trips *atomic.Int64) *clientv3.Client {
	if trips == nil {
		trips = new(atomic.Int64)
	}
	b.Helper()
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   endpoints,
		DialTimeout: 5 * time.Second,
		DialOptions: []grpc.DialOption{
			grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
				n.Add(1)
				trips.Add(1)
				return invoker(ctx, method, req, reply, cc, opts...)
			}),
			grpc.WithChainStreamInterceptor(func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
				trips.Add(1)
				s, err := streamer(ctx, desc, cc, method, opts...)
				return countingStream{s, n}, err
			}),
		},
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = cli.Close() })
	return cli
}

type countingStream struct {
	grpc.ClientStream
	n *atomic.Int64
}

func (s countingStream) SendMsg(m any) error { s.n.Add(1); return s.ClientStream.SendMsg(m) }

// BenchmarkVersusMutex measures requests and allocations per operation of
// the store and of etcd's own concurrency.Mutex on the same server: acquire
// and release, on the store and through core.Locks, a failed try, and a
// renewal (the Mutex has none of its own: its session's lease renews every
// lock of the session at once). The Mutex locks on a session made once,
// and, as leasehold grants a lease per lock, on a session per lock.
//
// Allocations count the test process alone: etcdserver.Endpoints runs the
// member in a process of its own (cmd/etcdmember), unless
// LEASEHOLD_TEST_ETCD names a server; docs/etcd.md has the commands.
func BenchmarkVersusMutex(b *testing.B) {
	eps := etcdserver.Endpoints(b)
	var n atomic.Int64
	cli := countingClient(b, eps, &n, nil)
	other := countingClient(b, eps, new(atomic.Int64), nil)
	// Keys of this run only: a server of LEASEHOLD_TEST_ETCD outlives it,
	// and -count runs the benchmark again.
	run := "bench-" + strconv.FormatInt(time.Now().UnixNano(), 36) + "/"
	s := etcdstore.NewWithOptions(cli, etcdstore.Options{Prefix: run})
	ctx := context.Background()
	const ttl = 30 * time.Second
	report := func(b *testing.B, start int64) {
		b.ReportMetric(float64(n.Load()-start)/float64(b.N), "reqs/op")
	}
	// Every sub-benchmark reports allocations, with or without -benchmem.
	b.Run("leasehold/acquire-release", func(b *testing.B) {
		b.ReportAllocs()
		start := n.Load()
		for b.Loop() {
			if _, ok, err := s.Acquire(ctx, "bench", "o", ttl); err != nil || !ok {
				b.Fatal(ok, err)
			}
			if ok, err := s.Release(ctx, "bench", "o"); err != nil || !ok {
				b.Fatal(ok, err)
			}
		}
		report(b, start)
	})
	b.Run("locks/acquire-release", func(b *testing.B) {
		b.ReportAllocs()
		locks := coretest.NewLocks(b, s)
		start := n.Load()
		for b.Loop() {
			lk, err := locks.Acquire(ctx, "bench-locks", core.WithTTL(ttl))
			if err != nil {
				b.Fatal(err)
			}
			if err := lk.Release(ctx); err != nil {
				b.Fatal(err)
			}
		}
		report(b, start)
	})
	b.Run("leasehold/failed-try", func(b *testing.B) {
		b.ReportAllocs()
		holder := etcdstore.NewWithOptions(other, etcdstore.Options{Prefix: run})
		if _, ok, err := holder.Acquire(ctx, "bench-held", "x", ttl); err != nil || !ok {
			b.Fatal(ok, err)
		}
		defer holder.Release(ctx, "bench-held", "x") // -count runs this again
		start := n.Load()
		for b.Loop() {
			if _, ok, err := s.Acquire(ctx, "bench-held", "o", ttl); err != nil || ok {
				b.Fatal(ok, err)
			}
		}
		report(b, start)
	})
	b.Run("leasehold/renew", func(b *testing.B) {
		b.ReportAllocs()
		if _, ok, err := s.Acquire(ctx, "bench-renew", "o", ttl); err != nil || !ok {
			b.Fatal(ok, err)
		}
		defer s.Release(ctx, "bench-renew", "o") // -count runs this again
		start := n.Load()
		for b.Loop() {
			if ok, err := s.Renew(ctx, "bench-renew", "o", ttl); err != nil || !ok {
				b.Fatal(ok, err)
			}
		}
		report(b, start)
	})
	session, err := concurrency.NewSession(cli, concurrency.WithTTL(30))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = session.Close() })
	b.Run("mutex/lock-unlock", func(b *testing.B) {
		b.ReportAllocs()
		m := concurrency.NewMutex(session, "/"+run+"bench-mutex/")
		start := n.Load()
		for b.Loop() {
			if err := m.Lock(ctx); err != nil {
				b.Fatal(err)
			}
			if err := m.Unlock(ctx); err != nil {
				b.Fatal(err)
			}
		}
		report(b, start)
	})
	b.Run("mutex/session-lock-unlock", func(b *testing.B) {
		b.ReportAllocs()
		start := n.Load()
		for b.Loop() {
			session, err := concurrency.NewSession(cli, concurrency.WithTTL(30))
			if err != nil {
				b.Fatal(err)
			}
			m := concurrency.NewMutex(session, "/"+run+"bench-mutex-session/")
			if err := m.Lock(ctx); err != nil {
				b.Fatal(err)
			}
			if err := m.Unlock(ctx); err != nil {
				b.Fatal(err)
			}
			if err := session.Close(); err != nil {
				b.Fatal(err)
			}
		}
		report(b, start)
	})
	b.Run("mutex/failed-try", func(b *testing.B) {
		b.ReportAllocs()
		otherSession, err := concurrency.NewSession(other, concurrency.WithTTL(30))
		if err != nil {
			b.Fatal(err)
		}
		defer otherSession.Close()
		if err := concurrency.NewMutex(otherSession, "/"+run+"bench-mutex-held/").Lock(ctx); err != nil {
			b.Fatal(err)
		}
		m := concurrency.NewMutex(session, "/"+run+"bench-mutex-held/")
		start := n.Load()
		for b.Loop() {
			if err := m.TryLock(ctx); err != concurrency.ErrLocked {
				b.Fatal(err)
			}
		}
		report(b, start)
	})
}
