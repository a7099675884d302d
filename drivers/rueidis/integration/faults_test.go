package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/leasehold/leasehold/core"
	"github.com/leasehold/leasehold/internal/testserver"
	"github.com/leasehold/leasehold/internal/testserver/faults"
)

// The fault scenarios of internal/testserver/faults on private Redis
// servers: a restart without persistence, which frees every lock, and one
// with an append-only file synced at every write, which keeps them; a
// network that stalls under CPU load; every connection reset every 50ms.
// Their figures are docs/production.md's.

// expiryScript answers when ARGV[1]'s lock, the hash KEYS[1], expires, in
// Unix milliseconds; -3 when ARGV[1] does not hold it.
const expiryScript = `if redis.call('HGET', KEYS[1], 'o') == ARGV[1] then return redis.call('PEXPIRETIME', KEYS[1]) end return -3`

// faultTarget is the store on srv, for the scenarios; volatile if srv
// keeps nothing across a restart.
func faultTarget(t testing.TB, srv *testserver.Server, volatile bool) faults.Target {
	admin := newClient(t, srv.DSN)
	return faults.Target{
		Name:     "Redis",
		Server:   srv,
		Volatile: volatile,
		Open: func(t testing.TB, addr string) core.LockStore {
			return newStore(t, srv.DSNAt(addr), prefix)
		},
		Expiry: func(ctx context.Context, key, owner string) (time.Time, error) {
			// The scenarios' keys need no escaping (see docs/redis.md).
			cmd := admin.B().Eval().Script(expiryScript).Numkeys(1).Key(prefix + "{" + key + "}").Arg(owner).Build()
			ms, err := admin.Do(ctx, cmd).AsInt64()
			switch {
			case err != nil:
				return time.Time{}, err
			case ms < 0:
				return time.Time{}, fmt.Errorf("%s holds no lock on %s (%d)", owner, key, ms)
			}
			return time.UnixMilli(ms), nil
		},
	}
}

// TestFaultRestart: a Redis without persistence restarts under held locks
// and comes back empty; then it crashes and stays down longer than the
// ttl.
func TestFaultRestart(t *testing.T) {
	t.Parallel()
	faults.Restart(t, faultTarget(t, testserver.PrivateRedis(t), true))
}

// TestFaultRestartPersistent: the same with an append-only file synced at
// every write: the locks survive the restart.
func TestFaultRestartPersistent(t *testing.T) {
	t.Parallel()
	srv := testserver.PrivateRedis(t, "--appendonly", "yes", "--appendfsync", "always")
	faults.Restart(t, faultTarget(t, srv, false))
}

// TestFaultStall keeps every core busy: it runs alone, not in parallel
// with the restarts, whose holders must give up by the ttl after their
// last confirmed renewal.
func TestFaultStall(t *testing.T) {
	faults.Stall(t, faultTarget(t, testserver.PrivateRedis(t), false))
}

func TestFaultResetStorm(t *testing.T) {
	t.Parallel()
	faults.ResetStorm(t, faultTarget(t, testserver.PrivateRedis(t), false))
}
