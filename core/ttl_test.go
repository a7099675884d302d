package core_test

import (
	"context"
	"testing"
	"time"

	"github.com/leasehold/leasehold/core"
	"github.com/leasehold/leasehold/core/coretest"
)

// TestOneTTLDefault checks the package documentation's rule for the ttl:
// WithDefaultTTL on New sets the ttl of every lock, job and election made
// without an override, and WithTTL, WithJobTTL and Campaign.TTL override it
// where each is made.
func TestOneTTLDefault(t *testing.T) {
	const def, own = 7 * time.Second, 11 * time.Second
	clock := core.NewManualClock(clusterStart)
	store := core.NewMemoryStore(core.WithMemoryClock(clock))
	l := coretest.NewLocks(t, store, core.WithClock(clock), core.WithDefaultTTL(def))

	check := func(what string, got, want time.Duration) {
		t.Helper()
		if got != want {
			t.Errorf("%s: ttl %v, want %v", what, got, want)
		}
	}
	check("lock", mustAcquire(t, l, "lock").TTL(), def)
	check("lock with WithTTL", mustAcquire(t, l, "lock-own", core.WithTTL(own)).TTL(), own)

	jobTTLs := func(key string, opts ...core.JobOption) (lease, run time.Duration) {
		t.Helper()
		job, err := l.Job(func(ctx context.Context) error {
			run = core.LockFromContext(ctx).TTL()
			return nil
		}, append([]core.JobOption{core.WithJobKey(key), core.OnOneInstance(), core.WithoutOverlapping()}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		if err := job.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		for _, info := range live(t, store) {
			if info.Key == key+":owner" {
				lease = info.ExpiresIn
			}
		}
		return lease, run
	}
	lease, run := jobTTLs("job")
	check("job lease", lease, def)
	check("job run lock", run, def)
	lease, run = jobTTLs("job-own", core.WithJobTTL(own))
	check("job lease with WithJobTTL", lease, own)
	check("job run lock with WithJobTTL", run, own)

	leadTTL := func(key string, c core.Campaign) time.Duration {
		t.Helper()
		got := make(chan time.Duration, 1)
		c.OnAcquired = func(lead *core.Lock) error { got <- lead.TTL(); return nil }
		if _, err := l.Elect(key, c); err != nil {
			t.Fatal(err)
		}
		select {
		case d := <-got:
			return d
		case <-time.After(10 * time.Second):
			t.Fatalf("election %q: no leadership", key)
			return 0
		}
	}
	check("election", leadTTL("lead", core.Campaign{}), def)
	check("election with Campaign.TTL", leadTTL("lead-own", core.Campaign{TTL: own}), own)
}
