package faults

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/leasehold/leasehold/core"
	"github.com/leasehold/leasehold/internal/testserver"
)

// StalledAcquires stalls the network to the target's server for 4s, twice
// the locks' ttl, while nine acquires are sent; each gives up after 500ms,
// so its outcome is unknown. When the network resumes, the server runs the
// acquires it was sent, and takes keys that no caller holds; the releases
// core goes on sending after an unknown outcome must free each of them
// long before its lease could end (a ttl after the resume), and in fact
// within about 100ms of the server answering again. The figures are how
// many acquires the server ran after the resume; when, after it, keys
// were seen held (from the start of the first List that saw one to the
// start of the last), and for how long at most; and when the server first
// answered a query on a connection that never stalled. That answer, not the resume, is when the
// server answers again: right after a stall it starts serving every
// connection opened during the stall at once, those of the releases in
// flight among them. The target's stores must list their locks
// (core.Lister).
func StalledAcquires(t *testing.T, tg Target) {
	const keys, stall = 9, 2 * TTL
	proxy := testserver.NewProxy(t, tg.Server.Addr())
	h := NewHolders(t, tg, tg.Open(t, proxy.Addr()), "stalled-acquire")
	lister, ok := tg.Open(t, tg.Server.Addr()).(core.Lister)
	if !ok {
		t.Fatalf("the %s store does not implement core.Lister", tg.Name)
	}
	prefix := fmt.Sprintf("unknown-%d:", time.Now().UnixNano())
	ctx := context.Background()
	// Connections first, taken at once so that there are several, for the
	// acquires to be sent on and reach the server when the network
	// resumes (a connection opened during the stall never gets that far).
	var warm sync.WaitGroup
	for i := range keys {
		warm.Go(func() {
			lk, _, err := h.acquireRetrying(ctx, fmt.Sprintf("%swarm%d", prefix, i), 10*time.Second)
			if err != nil {
				t.Error(err)
				return
			}
			t.Cleanup(func() { lk.Release(ctx) })
		})
	}
	warm.Wait()
	if t.Failed() {
		t.FailNow()
	}
	proxy.Stall()
	stalled := time.Now()
	var wg sync.WaitGroup
	for i := range keys {
		wg.Go(func() {
			actx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
			defer cancel()
			if lk, err := h.Acquire(actx, fmt.Sprintf("%sk%d", prefix, i)); err == nil {
				t.Errorf("an acquire through a stalled network succeeded: %s", lk.Key())
			}
		})
	}
	wg.Wait()
	time.Sleep(time.Until(stalled.Add(stall)))
	// The lister's connection, used just now, needs no ping (a client
	// may ping one idle for a second) when the watch below starts: its
	// first List after the resume is one round trip, on a connection
	// that never stalled, and says when the server answers again.
	if _, err := lister.List(ctx, prefix+"k"); err != nil {
		t.Fatal(err)
	}
	proxy.Resume()
	resumed := time.Now()

	// Watch the keys from the resume on: which the server took, when keys
	// were seen held, and how long they were held at most: from the start
	// of the last List that saw none before (the resume if none did) to
	// the end of the first List that saw none after.
	taken := map[string]bool{}
	firstHeld, lastHeld, answered := time.Duration(-1), time.Duration(-1), time.Duration(-1)
	var clearSince time.Duration
	freeBy := time.Duration(-1)
	for {
		since := time.Since(resumed)
		lctx, cancel := context.WithTimeout(ctx, time.Second)
		live, err := lister.List(lctx, prefix+"k")
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		if answered < 0 {
			answered = time.Since(resumed)
		}
		for _, l := range live {
			taken[l.Key] = true
		}
		if len(live) > 0 {
			if firstHeld < 0 {
				firstHeld = since
			}
			lastHeld, freeBy = since, -1
		} else {
			if firstHeld < 0 {
				clearSince = since
			} else if freeBy < 0 {
				freeBy = time.Since(resumed)
			}
			if since > 500*time.Millisecond {
				break // the server has run what it held by now
			}
		}
		if since > TTL {
			t.Fatalf("a ttl (%v) after the network resumed, %d keys whose acquires failed are still held: the releases did not free them", TTL, len(live))
		}
		time.Sleep(2 * time.Millisecond)
	}
	freed := "no key was taken"
	if lastHeld >= 0 {
		freed = fmt.Sprintf("keys were seen held from %v to %v after it, held %v at most (none seen at %v, none by %v)",
			firstHeld.Round(time.Millisecond), lastHeld.Round(time.Millisecond), (freeBy - clearSince).Round(time.Millisecond),
			clearSince.Round(time.Millisecond), freeBy.Round(time.Millisecond))
	}
	Figure(t, "%s stalled %v while %d acquires were sent (each gave up after 500ms): the server ran %d of them after the resume; %s (ttl %v); the server's first answer after the resume, to a query on a connection that never stalled, came %v after it",
		tg.Name, stall, keys, len(taken), freed, TTL, answered.Round(time.Millisecond))
}
