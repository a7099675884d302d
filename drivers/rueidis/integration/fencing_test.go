package integration

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/leasehold/leasehold/core"
	rueidisstore "github.com/leasehold/leasehold/drivers/rueidis"
	"github.com/leasehold/leasehold/internal/testserver"
)

const prefix = "lh:"

// floorName is the Redis key of lock key's floor under prefix, for keys
// that need no escaping (see docs/redis.md for the layout).
func floorName(key string) string { return prefix + "{" + key + "}:floor" }

func mustAcquire(t *testing.T, s *rueidisstore.Store, key, owner string, ttl time.Duration) int64 {
	t.Helper()
	token, ok, err := s.Acquire(context.Background(), key, owner, ttl)
	if err != nil || !ok {
		t.Fatalf("Acquire(%q, %q) = %d, %v, %v; want acquired", key, owner, token, ok, err)
	}
	return token
}

func mustRelease(t *testing.T, s *rueidisstore.Store, key, owner string) {
	t.Helper()
	if ok, err := s.Release(context.Background(), key, owner); err != nil || !ok {
		t.Fatalf("Release(%q, %q) = %v, %v; want released", key, owner, ok, err)
	}
}

// retryErrors calls f until it returns no error, for up to 10 seconds:
// after a restart, each of the client's connections fails once (EOF)
// before rueidis dials it again, and an acquisition over one is an error
// (it is not retried, since it might have reached the server).
func retryErrors(t *testing.T, f func() error) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("still failing 10s after the restart: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// lostCounter takes three keys (one released, one held, one expired),
// lets lose run (it makes the server lose every key), and checks that each
// key's next token is greater than its last.
func lostCounter(t *testing.T, srv *testserver.Server, lose func()) {
	s := newStore(t, srv.DSN, prefix)
	last := map[string]int64{}
	for range 3 {
		last["released"] = mustAcquire(t, s, "released", "a", time.Minute)
		mustRelease(t, s, "released", "a")
	}
	last["held"] = mustAcquire(t, s, "held", "a", time.Minute)
	last["expired"] = mustAcquire(t, s, "expired", "a", time.Millisecond)
	lose()
	if n, err := redisDo(t, srv.DSN, "DBSIZE").AsInt64(); err != nil || n != 0 {
		t.Fatalf("DBSIZE after the loss = %d, %v; want 0 keys", n, err)
	}
	for _, key := range []string{"released", "held", "expired"} {
		var token int64
		retryErrors(t, func() (err error) {
			var ok bool
			if token, ok, err = s.Acquire(context.Background(), key, "b", time.Minute); err == nil && !ok {
				t.Fatalf("%s: not acquired after the server lost its keys", key)
			}
			return err
		})
		if token <= last[key] {
			t.Errorf("%s: token %d after the server lost its keys, last token %d: tokens must keep growing", key, token, last[key])
		}
		last[key] = token
	}
	// After a restart the server knows no script: List's pipeline of
	// EVALSHA falls back to EVAL.
	locks, err := s.List(context.Background(), "")
	if err != nil || len(locks) != 3 {
		t.Fatalf("List after the loss = %+v, %v; want the 3 locks taken since", locks, err)
	}
	for _, l := range locks {
		if l.Token != last[l.Key] || l.Owner != "b" {
			t.Errorf("List: %+v; want owner b, token %d", l, last[l.Key])
		}
	}
}

// TestTokensGrowAfterRestart: a server without persistence restarts and
// comes back empty; every key's next token is still greater than its last.
func TestTokensGrowAfterRestart(t *testing.T) {
	srv := testserver.PrivateRedis(t)
	lostCounter(t, srv, srv.Restart)
}

func TestTokensGrowAfterFlushAll(t *testing.T) {
	srv := testserver.PrivateRedis(t)
	lostCounter(t, srv, func() {
		if err := redisDo(t, srv.DSN, "FLUSHALL").Error(); err != nil {
			t.Fatal(err)
		}
	})
}

// TestLocksTokensGrowAfterRestart: the same through core.Locks, which also
// refuses (StoreContractError) a token not greater than one it saw.
func TestLocksTokensGrowAfterRestart(t *testing.T) {
	srv := testserver.PrivateRedis(t)
	// A short ttl: a release that a connection broken by the restart
	// cannot send leaves the key to expire before the next acquire.
	locks, err := core.New(newStore(t, srv.DSN, prefix), core.WithDefaultTTL(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	defer locks.Close(ctx)
	var tokens []int64
	for i := range 4 {
		if i == 2 {
			srv.Restart()
		}
		var lk *core.Lock
		retryErrors(t, func() (err error) {
			lk, err = locks.Acquire(ctx, "nightly-export")
			return err
		})
		tokens = append(tokens, lk.Token())
		if err := lk.Release(ctx); err != nil {
			// Only the first release after the restart may meet a
			// connection the restart broke; the store is not to blame.
			if i != 2 {
				t.Fatal(err)
			}
			t.Logf("release after the restart: %v (the key expires after its ttl)", err)
		}
	}
	for i := 1; i < len(tokens); i++ {
		if tokens[i] <= tokens[i-1] {
			t.Fatalf("tokens %v: they must grow across the restart", tokens)
		}
	}
}

// TestFloorAboveClock: a floor above the server's clock (the token of a
// server whose clock was ahead, or of a clock that was since set back)
// wins: the next tokens are the floor + 1, + 2.
func TestFloorAboveClock(t *testing.T) {
	srv := testserver.PrivateRedis(t)
	s := newStore(t, srv.DSN, prefix)
	ahead := time.Now().Add(30 * 24 * time.Hour).UnixMicro()
	if err := redisDo(t, srv.DSN, "SET", floorName("k"), strconv.FormatInt(ahead, 10)).Error(); err != nil {
		t.Fatal(err)
	}
	for i := range int64(2) {
		if token := mustAcquire(t, s, "k", "a", time.Minute); token != ahead+1+i {
			t.Fatalf("token %d, want the floor %d + %d", token, ahead, 1+i)
		}
		mustRelease(t, s, "k", "a")
	}
}

// TestFloorAtTheLimit: a floor that leaves no exact token below 2^53 (Lua's
// numbers are doubles) is an error, and the key is not taken.
func TestFloorAtTheLimit(t *testing.T) {
	srv := testserver.PrivateRedis(t)
	s := newStore(t, srv.DSN, prefix)
	if err := redisDo(t, srv.DSN, "SET", floorName("k"), strconv.FormatInt(1<<53-2, 10)).Error(); err != nil {
		t.Fatal(err)
	}
	if token := mustAcquire(t, s, "k", "a", time.Minute); token != 1<<53-1 {
		t.Fatalf("token %d, want 2^53-1", token)
	}
	mustRelease(t, s, "k", "a")
	token, ok, err := s.Acquire(context.Background(), "k", "a", time.Minute)
	if err == nil || ok {
		t.Fatalf("Acquire above 2^53-1 = %d, %v, %v; want an error", token, ok, err)
	}
	if n, err := redisDo(t, srv.DSN, "EXISTS", prefix+"{k}").AsInt64(); err != nil || n != 0 {
		t.Fatalf("EXISTS of the lock after the failed acquisition = %d, %v; want 0", n, err)
	}
}

// TestFloorRetention: the floor outlives the lock by the retention, moved
// along by renewals; with retention 0 it never expires.
func TestFloorRetention(t *testing.T) {
	srv := testserver.PrivateRedis(t)
	admin := newClient(t, srv.DSN)
	pttl := func(name string) time.Duration {
		t.Helper()
		ms, err := admin.Do(context.Background(), admin.B().Pttl().Key(name).Build()).AsInt64()
		if err != nil {
			t.Fatal(err)
		}
		return time.Duration(ms) * time.Millisecond
	}
	for _, tc := range []struct {
		retention time.Duration
		min, max  time.Duration // the floor's PTTL after acquire and after renew
	}{
		{time.Hour, time.Hour + 50*time.Second, time.Hour + time.Minute},
		{0, -time.Millisecond, -time.Millisecond},
	} {
		t.Run(fmt.Sprint(tc.retention), func(t *testing.T) {
			s := newStore(t, srv.DSN, prefix, rueidisstore.WithFloorRetention(tc.retention))
			key := "retention-" + fmt.Sprint(tc.retention)
			mustAcquire(t, s, key, "a", 10*time.Second)
			if d := pttl(floorName(key)); tc.min > 0 && (d < tc.min-50*time.Second || d > tc.max-50*time.Second) || tc.min < 0 && d != tc.min {
				t.Errorf("floor PTTL after acquire with ttl 10s: %v", d)
			}
			if ok, err := s.Renew(context.Background(), key, "a", time.Minute); err != nil || !ok {
				t.Fatal(ok, err)
			}
			if d := pttl(floorName(key)); d < tc.min || d > tc.max {
				t.Errorf("floor PTTL after renew with ttl 1m: %v, want in [%v, %v]", d, tc.min, tc.max)
			}
			mustRelease(t, s, key, "a")
			if d := pttl(floorName(key)); d < tc.min-time.Minute || d > tc.max {
				t.Errorf("floor PTTL after release: %v", d)
			}
		})
	}
}
