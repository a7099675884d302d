package faults_test

import (
	"testing"

	"github.com/leasehold/leasehold/internal/testserver"
	"github.com/leasehold/leasehold/internal/testserver/faults"
)

// TestStalledAcquires: acquires sent into a stalled network give up; the
// server runs them when the network resumes, and the keys they took are
// freed by the releases core keeps sending (see faults.StalledAcquires).
func TestStalledAcquires(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend, srv *testserver.Server) {
		faults.StalledAcquires(t, target(t, b, srv))
	})
}
