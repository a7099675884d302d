package faults_test

import (
	"testing"

	"github.com/leasehold/leasehold/internal/testserver"
	"github.com/leasehold/leasehold/internal/testserver/faults"
)

// TestStall: the network to the server stalls while every core of the host
// is busy; every holder gives up before the store's expiry (see
// faults.Stall).
func TestStall(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend, srv *testserver.Server) {
		faults.Stall(t, target(t, b, srv))
	})
}
