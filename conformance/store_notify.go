package conformance

import (
	"fmt"
	"testing"
	"time"

	"github.com/leasehold/leasehold/core"
)

// notifyCases is the "notify" group: the rules of core.Notifier and
// core.TryAcquirer, optional capabilities through which a waiting Acquire
// learns that a key may be free. They run on every store that implements
// them and are skipped, with the reason, on the others.
func notifyCases() []Case {
	cases := []Case{
		{
			Name:    "notify-release-wakes",
			Catches: "a Notifier that does not wake a subscriber of a key when another client releases it (a release that publishes nothing, a subscription on the wrong channel), or whose wake hands the key over instead of leaving it to Acquire.",
			Fix:     "Publish the release in the same statement or script that releases (a NOTIFY, a PUBLISH), subscribe per key or per table once per client, call wake on each message and when a subscription is (re)confirmed, and never write the lock from a notification.",
			run:     notifyReleaseWakes,
		},
		{
			Name:    "try-acquire-left",
			Catches: "a TryAcquirer whose refusal reports no time left, more than the holder's ttl, or time left for a free key; or whose acquisition differs from Acquire's.",
			Fix:     "Read the holder's expiry in the acquire statement or script that refuses, on the store's clock, and answer expiry - now (0 when unknown); answer as Acquire does otherwise.",
			run:     tryAcquireLeft,
		},
	}
	for i := range cases {
		cases[i].Group = "notify"
	}
	return cases
}

// notifyReleaseWakes: a subscriber is woken by another client's release,
// wakes (duplicated or not) grant nothing, and the key is free for
// whoever acquires it.
func notifyReleaseWakes(t testing.TB, e *env) {
	n, ok := e.store.(core.Notifier)
	if !ok {
		t.Skipf("the store does not implement core.Notifier (optional: waiters then poll), so the %q group cannot check it", "notify")
	}
	key, a, b := e.key(), e.ownerElsewhere("A"), e.owner("B")
	woke := make(chan struct{}, 16)
	unsubscribe, live := n.Subscribe(key, func() {
		select {
		case woke <- struct{}{}:
		default:
		}
	})
	defer unsubscribe()
	if !live {
		t.Skip("the store reports no live notifications (no listener): nothing to check")
	}
	e.mustAcquire(t, key, a, holdTTL, "no lock has ever held this key")
	if _, ok := e.acquire(t, key, b, holdTTL); ok {
		t.Fatalf("Acquire of %s by %s succeeded while %s held it", show(key), b, a)
	}
	// Wakes so far (a subscription confirmed) say nothing.
	for len(woke) > 0 {
		<-woke
	}
	e.mustRelease(t, key, a, "its holder has just acquired it")
	select {
	case <-woke:
	case <-time.After(e.opts.Timeout):
		t.Fatalf("no wake within %v of the release of %s by another client; a Notifier must wake the subscribers of a released key", e.opts.Timeout, show(key))
	}
	// The wake granted nothing: a third owner takes the key, B does not hold it.
	if e.release(t, key, b) {
		t.Fatalf("Release of %s by the woken subscriber %s returned true: a notification must never hand a key over", show(key), b)
	}
	e.mustAcquire(t, key, e.owner("C"), holdTTL, "its holder released it, and a wake takes nothing")
}

// tryAcquireLeft: a refused TryAcquire answers the holder's time left, at
// most its ttl; an accepted one a token, as Acquire would.
func tryAcquireLeft(t testing.TB, e *env) {
	ta, ok := e.store.(core.TryAcquirer)
	if !ok {
		t.Skipf("the store does not implement core.TryAcquirer (optional: waiters then back off), so the %q group cannot check it", "notify")
	}
	key, a, b := e.key(), e.owner("A"), e.owner("B")
	try := func(owner string) (int64, bool, time.Duration) {
		t.Helper()
		ctx, cancel := e.ctx()
		defer cancel()
		var (
			token int64
			ok    bool
			left  time.Duration
			err   error
		)
		e.timed(t, func() { token, ok, left, err = ta.TryAcquire(ctx, key, owner, holdTTL) })
		if err != nil {
			callFailed(t, fmt.Sprintf("TryAcquire(%s, %q, %v)", show(key), owner, holdTTL), err)
		}
		return token, ok, left
	}
	e.mustAcquire(t, key, a, holdTTL, "no lock has ever held this key")
	_, ok, left := try(b)
	if ok {
		e.cleanupRelease(t, key, b)
		t.Fatalf("TryAcquire of %s by %s succeeded while %s held it", show(key), b, a)
	}
	if left <= 0 || left > holdTTL {
		t.Fatalf("TryAcquire of %s, held for %v, answered %v left; want the holder's time left, in (0, %v]", show(key), holdTTL, left, holdTTL)
	}
	e.mustRelease(t, key, a, "its holder has just acquired it")
	token, ok, left := try(b)
	if ok {
		e.cleanupRelease(t, key, b)
	}
	if !ok || token <= 0 || left != 0 {
		t.Fatalf("TryAcquire of the released key %s answered (%d, %v, %v); want a positive token, acquired, and no time left", show(key), token, ok, left)
	}
}
