package faults_test

import (
	"testing"

	"github.com/leasehold/leasehold/internal/testserver"
	"github.com/leasehold/leasehold/internal/testserver/faults"
)

// TestResetStorm: every connection is reset every 50ms, in the middle of
// statements and of MySQL's acquire transaction; no key is granted twice,
// and nothing stays locked (see faults.ResetStorm).
func TestResetStorm(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend, srv *testserver.Server) {
		faults.ResetStorm(t, target(t, b, srv))
	})
}
