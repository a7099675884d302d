package integration

import (
	"context"
	"crypto/rand"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/leasehold/leasehold/conformance"
	"github.com/leasehold/leasehold/core"
	etcdstore "github.com/leasehold/leasehold/drivers/etcd"
	"github.com/leasehold/leasehold/internal/testserver/etcdserver"
)

// brokenTTL is the kit's ttl in TestKitFailsBrokenEtcdStores. The driver
// grants leases of ttl + 100ms rounded up (5s) and declares 1.2s of
// lateness (ExpiryPrecision); etcd frees a lease about 0.45s after its end
// (the leader's 500ms scan, then raft). The copy that frees at ttl/2 gets a
// lease of 3s (2.4s rounded up): expiry-frees-key's probe at ttl - ttl/6
// (4s) finds its lock gone, and renew-by-holder, which renews at ttl/3
// plus the lateness (2.8s, see the kit) and looks at ttl + ttl/6 plus the
// lateness (6.8s), finds its renewal of 3s gone too (or the renewal
// refused). The copy that frees a second late declares 2.2s, which must be
// at most ttl/2 for renew-by-holder to decide.
//
// A copy whose leases are the ttl rounded down to whole seconds (4s here)
// is not among them: it frees a lock less than a second early, and the kit
// cannot tell that from the second of lateness the store declares without
// looking closer than its tolerance of ttl/6 to a correct lock's expiry.
// TestLeaseNeverShorterThanTTL checks the granted lease itself.
const brokenTTL = 4800 * time.Millisecond

// flawedLease is a copy of the driver with one flaw in its lease: Acquire,
// Renew and RenewBatch hand the driver the ttl that lease returns instead
// of the caller's. It embeds the real store, so every other capability the
// kit uses reaches the driver unchanged: ExpiryPrecision (for the caller's
// ttl, as the flawed copy would still declare it), RenewBatch's MaxBatch,
// List, ResetTokens and Valid.
type flawedLease struct {
	*etcdstore.Store
	lease func(ttl time.Duration) time.Duration
}

func (s flawedLease) Acquire(ctx context.Context, key, owner string, ttl time.Duration) (int64, bool, error) {
	return s.Store.Acquire(ctx, key, owner, s.lease(ttl))
}

func (s flawedLease) Renew(ctx context.Context, key, owner string, ttl time.Duration) (bool, error) {
	return s.Store.Renew(ctx, key, owner, s.lease(ttl))
}

func (s flawedLease) RenewBatch(ctx context.Context, leases []core.Lease) ([]bool, error) {
	flawed := slices.Clone(leases)
	for i := range flawed {
		flawed[i].TTL = s.lease(flawed[i].TTL)
	}
	return s.Store.RenewBatch(ctx, flawed)
}

var (
	_ core.ExpiryPrecisioner       = flawedLease{}
	_ core.BatchRenewer            = flawedLease{}
	_ core.Lister                  = flawedLease{}
	_ core.Validator               = flawedLease{}
	_ conformance.TokenResetter    = flawedLease{}
	_ interface{ String() string } = flawedLease{}
)

// halved is the lease of a driver that frees a lock at half its ttl (a
// ttl read as half its unit, a lease meant to be renewed at ttl/2 taken as
// the lock's expiry).
func halved(ttl time.Duration) time.Duration { return max(ttl/2, time.Millisecond) }

// declaredLate is a copy of the driver whose leases last a second longer
// than the driver's, and that declares that second in its expiry
// precision: a store as late as it says, within the contract, which the
// kit must pass in every case. A case whose wait for a lock to be gone
// leaves out the declared lateness fails it.
type declaredLate struct{ flawedLease }

// ExpiryPrecision declares the driver's lateness for the longer lease,
// plus the second it adds.
func (s declaredLate) ExpiryPrecision(ttl time.Duration) time.Duration {
	return s.Store.ExpiryPrecision(s.lease(ttl)) + s.lease(ttl) - ttl
}

// aSecondLater is declaredLate's lease.
func aSecondLater(ttl time.Duration) time.Duration { return ttl + time.Second }

// firstLine is a verdict's first message, on one line.
func firstLine(v conformance.Verdict) string {
	m, _, _ := strings.Cut(v.Message(), "\n")
	return m
}

// expiryCases are the kit's cases that call a store directly and let a
// lock expire: the ones a lease that is too short can fail. They wait in
// real time, so they run together. The race cases are left out: their
// hundreds of calls at once would slow the member, on a busy machine, by
// more than the lateness the cases allow.
// batch-mixed-leases is in: its leases of TTL/2 (2s, etcd's minimum, at
// this ttl) must be gone TTL/2 + TTL/6 plus the declared lateness after
// they were set.
func expiryCases() []conformance.Case {
	var cases []conformance.Case
	for _, c := range conformance.Cases() {
		if c.Waits && !c.Concurrent && c.Group != "instances" {
			cases = append(cases, c)
		}
	}
	return cases
}

// TestKitFailsBrokenEtcdStores runs the kit's expiry cases against a copy
// of the driver whose lease is too short, against the driver itself and
// against a copy that frees a second later and declares it, on one
// member, all at once (about 2 × brokenTTL): the kit must fail
// the short copy, conclusively, in the cases named for it (and it may fail
// others), and pass the driver and the late copy in every one of them. The
// copies declare the driver's expiry precision, so what the kit catches is
// the lease alone.
func TestKitFailsBrokenEtcdStores(t *testing.T) {
	if testing.Short() {
		t.Skip("waits in real time")
	}
	endpoints := etcdserver.Endpoints(t)
	stores := []struct {
		name string
		wrap func(*etcdstore.Store) core.LockStore
		// must is the cases that must fail; nil for a store within the
		// contract, which must pass every case.
		must []string
	}{
		{"driver", func(s *etcdstore.Store) core.LockStore { return s }, nil},
		{"frees as late as it declares", func(s *etcdstore.Store) core.LockStore { return declaredLate{flawedLease{s, aSecondLater}} }, nil},
		{"frees before its ttl", func(s *etcdstore.Store) core.LockStore { return flawedLease{s, halved} }, []string{"expiry-frees-key", "renew-by-holder"}},
	}
	cases := expiryCases()
	opts := conformance.Options{Callers: 4, TTL: brokenTTL}
	verdicts := make([][]conformance.Verdict, len(stores))
	var wg sync.WaitGroup
	for i, s := range stores {
		cli := newClient(t, endpoints)
		prefix := "leasehold-broken-" + rand.Text()[:8] + "/"
		newStore := func(testing.TB) core.LockStore {
			return s.wrap(etcdstore.NewWithOptions(cli, etcdstore.Options{Prefix: prefix}))
		}
		verdicts[i] = make([]conformance.Verdict, len(cases))
		for j, c := range cases {
			wg.Go(func() { verdicts[i][j] = c.Judge(t, newStore, opts) })
		}
	}
	wg.Wait()
	for i, s := range stores {
		var failed []string
		for j, c := range cases {
			v := verdicts[i][j]
			switch {
			case v.Failed && strings.Contains(strings.Join(v.Messages, "\n"), "inconclusive"):
				t.Errorf("%s: %s was inconclusive: %s", s.name, c.Name, firstLine(v))
			case v.Failed:
				failed = append(failed, c.Name)
				if s.must == nil {
					t.Errorf("%s: the kit's case %s failed a store within the contract: %s", s.name, c.Name, strings.Join(v.Messages, "\n"))
				} else {
					t.Logf("%s: %s failed it: %s", s.name, c.Name, firstLine(v))
				}
			case v.Skipped:
				t.Logf("%s: %s skipped: %s", s.name, c.Name, firstLine(v))
			}
		}
		for _, name := range s.must {
			if !slices.Contains(failed, name) {
				t.Errorf("%s: the kit's case %s passed this flawed copy of the driver (failed: %v)", s.name, name, failed)
			}
		}
		if s.must == nil {
			t.Logf("%s: passed %d expiry cases", s.name, len(cases)-len(failed))
		} else {
			t.Logf("%s: failed %d of %d expiry cases: %s", s.name, len(failed), len(cases), strings.Join(failed, ", "))
		}
	}
}
