package integration

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/leasehold/leasehold/core"
	rueidisstore "github.com/leasehold/leasehold/drivers/rueidis"
	"github.com/leasehold/leasehold/internal/testserver"
)

// counting counts round trips: each Do, and each DoMulti (one pipeline).
type counting struct {
	rueidis.Client
	n atomic.Int64
}

func (c *counting) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	c.n.Add(1)
	return c.Client.Do(ctx, cmd)
}

func (c *counting) DoMulti(ctx context.Context, cmds ...rueidis.Completed) []rueidis.RedisResult {
	c.n.Add(1)
	return c.Client.DoMulti(ctx, cmds...)
}

// raw is what an application that wrote its own lock on rueidis would
// send: SET NX PX to take a key, a compare-and-delete script to release it,
// a compare-and-expire script to renew it. It has no fencing token.
type raw struct{ c rueidis.Client }

var (
	rawRelease = rueidis.NewLuaScript(`if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`)
	rawRenew   = rueidis.NewLuaScript(`if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end return 0`)
	errNotDone = errors.New("raw: not acquired, renewed or released")
)

func (r raw) acquire(ctx context.Context, key, owner string, ttl time.Duration) (bool, error) {
	err := r.c.Do(ctx, r.c.B().Set().Key(key).Value(owner).Nx().Px(ttl).Build()).Error()
	if rueidis.IsRedisNil(err) {
		return false, nil
	}
	return err == nil, err
}

func (r raw) release(ctx context.Context, key, owner string) (bool, error) {
	n, err := rawRelease.Exec(ctx, r.c, []string{key}, []string{owner}).AsInt64()
	return n == 1, err
}

func (r raw) renew(ctx context.Context, key, owner string, ttl time.Duration) (bool, error) {
	n, err := rawRenew.Exec(ctx, r.c, []string{key}, []string{owner, "60000"}).AsInt64()
	return n == 1, err
}

// done turns a call's answer into an error unless it was yes.
func done(ok bool, err error) error {
	if err != nil || !ok {
		return errors.Join(err, errNotDone)
	}
	return nil
}

// acquired drops an acquisition's token.
func acquired(_ int64, ok bool, err error) (bool, error) { return ok, err }

func failed(ok bool, err error) error {
	if err != nil || ok {
		return errors.Join(err, errors.New("the try succeeded"))
	}
	return nil
}

// BenchmarkStore measures each operation through the Store ("store") and
// its raw rueidis counterpart ("raw"): round trips, allocations and bytes
// per operation, on one client, one goroutine. "paired" runs both in one
// loop, alternating which goes first, and reports the latency ratio, which
// a drift of the server or the machine affects alike. "locks" is a whole
// lock cycle through core.Locks (Acquire and Release of a *core.Lock),
// against the raw cycle.
func BenchmarkStore(b *testing.B) {
	for _, srv := range servers {
		b.Run(srv.name, func(b *testing.B) {
			url, prefix := srv.get(b)
			c := &counting{Client: newClient(b, url)}
			s, err := rueidisstore.New(c, rueidisstore.WithPrefix(prefix))
			if err != nil {
				b.Fatal(err)
			}
			r := raw{c}
			locks, err := core.New(s, core.WithLogger(slog.New(slog.DiscardHandler)))
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			b.Cleanup(func() { locks.Close(ctx) })
			const ttl = time.Minute
			rawKey := prefix + "raw"
			mustHold := func(err error) {
				if err != nil {
					b.Fatal(err)
				}
			}
			mustHold(done(acquired(s.Acquire(ctx, "held", "o", ttl))))
			mustHold(done(r.acquire(ctx, rawKey+"-held", "o", ttl)))
			type op struct {
				name       string
				store, raw func() error
			}
			for _, o := range []op{{
				"acquire+release",
				func() error {
					if err := done(acquired(s.Acquire(ctx, "k", "o", ttl))); err != nil {
						return err
					}
					return done(s.Release(ctx, "k", "o"))
				},
				func() error {
					if err := done(r.acquire(ctx, rawKey, "o", ttl)); err != nil {
						return err
					}
					return done(r.release(ctx, rawKey, "o"))
				},
			}, {
				"renew",
				func() error { return done(s.Renew(ctx, "held", "o", ttl)) },
				func() error { return done(r.renew(ctx, rawKey+"-held", "o", ttl)) },
			}, {
				"failed-try",
				func() error {
					return failed(acquired(s.Acquire(ctx, "held", "other", ttl)))
				},
				func() error { return failed(r.acquire(ctx, rawKey+"-held", "other", ttl)) },
			}, {
				"locks-cycle",
				func() error {
					lk, err := locks.Acquire(ctx, "cycle", core.WithTTL(ttl))
					if err != nil {
						return err
					}
					return lk.Release(ctx)
				},
				func() error {
					if err := done(r.acquire(ctx, rawKey, "o", ttl)); err != nil {
						return err
					}
					return done(r.release(ctx, rawKey, "o"))
				},
			}} {
				b.Run(o.name, func(b *testing.B) { testserver.Paired(b, o.store, o.raw, &c.n, "roundtrips/op") })
			}
		})
	}
}

// TestRoundTrips: acquire, renew, release and a failed try are one round
// trip each, on a standalone server and on a Cluster.
func TestRoundTrips(t *testing.T) {
	for _, srv := range servers {
		t.Run(srv.name, func(t *testing.T) {
			url, prefix := srv.get(t)
			c := &counting{Client: newClient(t, url)}
			s, err := rueidisstore.New(c, rueidisstore.WithPrefix(prefix))
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			// The first call of each script on a node finds it unloaded
			// (NOSCRIPT) and sends it again with EVAL: load every script on
			// k's node first.
			if err := done(acquired(s.Acquire(ctx, "k", "w", time.Minute))); err != nil {
				t.Fatal(err)
			}
			if err := errors.Join(done(s.Renew(ctx, "k", "w", time.Minute)), done(s.Release(ctx, "k", "w"))); err != nil {
				t.Fatal(err)
			}
			for _, step := range []struct {
				name string
				f    func() error
			}{
				{"acquire", func() error { return done(acquired(s.Acquire(ctx, "k", "a", time.Minute))) }},
				{"failed try", func() error { return failed(acquired(s.Acquire(ctx, "k", "b", time.Minute))) }},
				{"renew", func() error { return done(s.Renew(ctx, "k", "a", time.Minute)) }},
				{"release", func() error { return done(s.Release(ctx, "k", "a")) }},
			} {
				c.n.Store(0)
				if err := step.f(); err != nil {
					t.Fatalf("%s: %v", step.name, err)
				}
				if n := c.n.Load(); n != 1 {
					t.Errorf("%s: %d round trips, want 1", step.name, n)
				}
			}
		})
	}
}
