package integration_test

import (
	"context"
	"testing"
	"time"

	"github.com/leasehold/leasehold/core"
	"github.com/leasehold/leasehold/internal/testserver"
	"github.com/leasehold/leasehold/internal/testserver/faults"
)

// The fault scenarios of internal/testserver/faults on a private
// PostgreSQL server, through pgx's native pool: a restart and a crash
// under held locks, and a network that stalls under CPU load. Their
// figures are docs/production.md's.

// faultTarget is the store on srv, for the scenarios.
func faultTarget(t testing.TB, srv *testserver.Server) faults.Target {
	direct := openPool(t, srv.DSN, nil)
	migrated(t, direct)
	return faults.Target{
		Name:   "PostgreSQL (pgx)",
		Server: srv,
		Open: func(t testing.TB, addr string) core.LockStore {
			return migrated(t, openPool(t, srv.DSNAt(addr), nil))
		},
		Expiry: func(ctx context.Context, key, owner string) (time.Time, error) {
			var micros int64
			err := direct.QueryRow(ctx, `SELECT (extract(epoch FROM expires_at) * 1000000)::bigint FROM leasehold_locks WHERE lock_key = $1 AND owner = $2`, key, owner).Scan(&micros)
			return time.UnixMicro(micros), err
		},
	}
}

func TestFaultRestart(t *testing.T) {
	t.Parallel()
	faults.Restart(t, faultTarget(t, testserver.PrivatePostgres(t)))
}

// TestFaultStall keeps every core busy: it runs alone, not in parallel
// with the restart, whose holders must give up by the ttl after their
// last confirmed renewal.
func TestFaultStall(t *testing.T) {
	faults.Stall(t, faultTarget(t, testserver.PrivatePostgres(t)))
}
