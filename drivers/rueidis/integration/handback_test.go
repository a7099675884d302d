package integration

import (
	"context"
	"io"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/leasehold/leasehold/core"
	"github.com/leasehold/leasehold/core/coretest"
	rueidisstore "github.com/leasehold/leasehold/drivers/rueidis"
	"github.com/leasehold/leasehold/internal/testserver"
)

// lostReply runs every command, but answers the next one with a
// connection error once drop is set, as if the reply was lost on the way.
type lostReply struct {
	rueidis.Client
	drop atomic.Bool
	sent atomic.Int64 // commands sent
}

func (c *lostReply) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	c.sent.Add(1)
	res := c.Client.Do(ctx, cmd)
	if c.drop.Swap(false) {
		return rueidis.NewErrorResult(io.ErrUnexpectedEOF)
	}
	return res
}

// TestAcquireLostReplyReleased: an acquisition whose reply is lost took
// the key on the server; the store reports the error, and core.Locks,
// assuming the store said yes, releases the key, so it does not stay
// locked until its ttl. The store sends one release, core's, not two.
func TestAcquireLostReplyReleased(t *testing.T) {
	url, prefix := testserver.Redis(t)
	c := &lostReply{Client: newClient(t, url)}
	s, err := rueidisstore.New(c, rueidisstore.WithPrefix(prefix))
	if err != nil {
		t.Fatal(err)
	}
	// Load the scripts, so that each call below is one command.
	mustAcquire(t, s, "warm", "w", time.Minute)
	mustRelease(t, s, "warm", "w")
	locks := coretest.NewLocks(t, s)
	c.sent.Store(0)
	c.drop.Store(true)
	if _, err := locks.Acquire(context.Background(), "k", core.WithTTL(time.Hour)); err == nil {
		t.Fatal("Acquire with a lost reply succeeded; want an error")
	}
	if n := c.sent.Load(); n != 2 {
		t.Fatalf("%d scripts sent; want the acquisition and one release", n)
	}
	mustAcquire(t, newStore(t, url, prefix), "k", "b", time.Minute)
}

// TestAcquireCancelled: a context cancelled before the call is an error,
// never "not acquired", and leaves the key free.
func TestAcquireCancelled(t *testing.T) {
	url, prefix := testserver.Redis(t)
	s := newStore(t, url, prefix)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, ok, err := s.Acquire(ctx, "k", "a", time.Hour); err == nil || ok {
		t.Fatalf("Acquire on a cancelled context = %v, %v; want an error", ok, err)
	}
	mustAcquire(t, s, "k", "b", time.Minute)
}

// retries records, per script, whether rueidis may send it again after a
// connection error.
type retries struct {
	rueidis.Client
	mu        sync.Mutex
	retryable map[string]bool // by the script's SHA1
}

func (c *retries) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	c.mu.Lock()
	c.retryable[cmd.Commands()[1]] = cmd.IsRetryable()
	c.mu.Unlock()
	return c.Client.Do(ctx, cmd)
}

// TestRetryPolicy: rueidis may send a renewal again (a second run does what
// the first did), never an acquisition (a second would find the key held
// by its own owner: not acquired) or a release (a second would answer
// false).
func TestRetryPolicy(t *testing.T) {
	url, prefix := testserver.Redis(t)
	c := &retries{Client: newClient(t, url), retryable: map[string]bool{}}
	s, err := rueidisstore.New(c, rueidisstore.WithPrefix(prefix))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	sent := func(op string, f func()) bool {
		t.Helper()
		c.mu.Lock()
		clear(c.retryable)
		c.mu.Unlock()
		f()
		if len(c.retryable) != 1 {
			t.Fatalf("%s sent %d scripts (%v), want 1", op, len(c.retryable), c.retryable)
		}
		for _, r := range c.retryable {
			return r
		}
		return false
	}
	if sent("acquire", func() { mustAcquire(t, s, "k", "a", time.Minute) }) {
		t.Error("acquire is retryable")
	}
	if !sent("renew", func() {
		if ok, err := s.Renew(ctx, "k", "a", time.Minute); err != nil || !ok {
			t.Fatal(ok, err)
		}
	}) {
		t.Error("renew is not retryable")
	}
	if sent("release", func() { mustRelease(t, s, "k", "a") }) {
		t.Error("release is retryable")
	}
}
