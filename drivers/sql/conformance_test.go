package sqlstore

import (
	"testing"
	"time"

	"github.com/leasehold/leasehold/conformance"
	"github.com/leasehold/leasehold/core"
)

// TestConformance runs the conformance kit against each dialect on a real
// server (and SQLite in a file shared by 16 connections), with 32 callers
// per race on a pool of at least 16 connections, so races overlap on the
// server.
func TestConformance(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			s, _ := newStore(t, b)
			opts := conformance.Options{Callers: callers, ResetTokens: s.ResetTokens}
			if b.dialect.name == SQLite.name {
				// SQLite runs one writer at a time, and modernc's SQLite is
				// several times slower under the race detector: a call queued
				// behind 31 others can take over a second, and the expiry
				// cases need calls well within TTL/3.
				opts.TTL = 6 * time.Second
			}
			conformance.Run(t, func(testing.TB) core.LockStore { return s }, opts)
		})
	}
}
