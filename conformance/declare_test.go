package conformance_test

import (
	"slices"
	"testing"
	"time"

	"github.com/leasehold/leasehold/conformance"
	"github.com/leasehold/leasehold/core"
)

// TestDeclare declares the kit through Declare, as a framework that builds
// its specs first would, checks that it declared one spec per case in the
// order of Cases, and then runs each body as a subtest.
func TestDeclare(t *testing.T) {
	clock := core.NewManualClock(time.Unix(1_700_000_000, 0))
	store := core.NewMemoryStore(core.WithMemoryClock(clock))
	type spec struct {
		name string
		body func(testing.TB)
	}
	var specs []spec
	conformance.Declare(func(name string, body func(testing.TB)) {
		specs = append(specs, spec{name, body})
	}, func(testing.TB) core.LockStore { return store }, conformance.Options{
		AdvanceTime: clock.Advance,
		ResetTokens: store.ResetTokens,
	})
	var want, got []string
	for _, c := range conformance.Cases() {
		want = append(want, c.Name)
	}
	for _, s := range specs {
		got = append(got, s.name)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("Declare declared %q, want the cases in order %q", got, want)
	}
	for _, s := range specs {
		t.Run(s.name, func(t *testing.T) { s.body(t) })
	}
}
