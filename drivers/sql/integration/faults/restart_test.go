package faults_test

import (
	"testing"

	"github.com/leasehold/leasehold/internal/testserver"
	"github.com/leasehold/leasehold/internal/testserver/faults"
)

// TestRestart: the server restarts under held locks, quickly, then after a
// crash and an outage longer than the ttl (see faults.Restart).
func TestRestart(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend, srv *testserver.Server) {
		faults.Restart(t, target(t, b, srv))
	})
}
