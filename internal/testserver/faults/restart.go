package faults

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/leasehold/leasehold/core"
)

// Restart restarts the target's server under held locks, first quickly,
// then after a crash (kill -9) and an outage longer than the ttl, while a
// second instance waits for the keys.
//
// After the quick restart, each holder either keeps its lock (its renewals
// recover) or gives it up with LostDeadline before the store's expiry; on a
// volatile server, which comes back empty, every holder must learn of its
// loss at its next renewal (LostRefused), no later than the ttl after its
// last confirmed one was sent, and the second instance, which may take a
// key before that, must get a greater fencing token. After the crash, every
// holder gives its lock up with LostDeadline before the store's expiry and
// no later than the ttl after its last confirmed renewal was sent, and the
// second instance is granted no key while its holder still believes it
// holds it. Both instances' clients reconnect with no action from the
// application; the figure counts the calls that failed first.
func Restart(t *testing.T, tg Target) {
	const n = 8
	ctx := context.Background()
	a := NewHolders(t, tg, tg.Open(t, tg.Server.Addr()), "a")
	contender := NewHolders(t, tg, tg.Open(t, tg.Server.Addr()), "b")
	take := func(phase string) []*core.Lock {
		t.Helper()
		locks := make([]*core.Lock, n)
		for i := range locks {
			lk, _, err := a.acquireRetrying(ctx, fmt.Sprintf("restart:%s:%d", phase, i), 10*time.Second)
			if err != nil {
				t.Fatalf("%s: %v", phase, err)
			}
			locks[i] = lk
		}
		return locks
	}

	// A quick restart.
	locks := take("quick")
	time.Sleep(TTL / 2)
	start := time.Now()
	tg.Server.Restart()
	down := time.Since(start)
	var quick string
	if tg.Volatile {
		quick = lostInRestart(t, contender, a, locks, start)
	} else {
		time.Sleep(TTL)
		kept := 0
		for _, lk := range locks {
			if lk.Held() {
				kept++
			}
		}
		lost := a.awaitLosses(n-kept, TTL)
		if kept+len(lost) != n {
			t.Fatalf("after a quick restart: %d locks held, %d lost, of %d", kept, len(lost), n)
		}
		CheckLosses(t, lost, core.LostDeadline, true)
		quick = fmt.Sprintf("%d of %d locks kept, %d lost", kept, n, len(lost))
	}
	for _, lk := range locks {
		_ = lk.Release(ctx)
	}
	before := len(a.Losses())

	// A crash, and the server stays down for longer than the ttl, while
	// the contender waits for the keys.
	locks = take("crash")
	time.Sleep(TTL / 2)
	tg.Server.Kill()
	crashed := time.Now()
	granted := make(chan error, n)
	for _, lk := range locks {
		go func() {
			won, _, err := contender.acquireRetrying(ctx, lk.Key(), 4*TTL)
			if err != nil {
				granted <- fmt.Errorf("the contender could not take %s: %w", lk.Key(), err)
				return
			}
			// A second holder while the first still believes is a
			// double grant.
			if lk.Held() || lk.Context().Err() == nil {
				granted <- fmt.Errorf("%s was granted to a second instance while its holder still believed it held it", lk.Key())
			} else {
				granted <- nil
			}
			_ = won.Release(ctx)
		}()
	}
	time.Sleep(TTL + TTL/4)
	tg.Server.Start()
	outage := time.Since(crashed)
	for range locks {
		if err := <-granted; err != nil {
			t.Error(err)
		}
	}
	losses := a.awaitLosses(before+n, TTL)[before:]
	if len(losses) != n {
		t.Fatalf("%d locks lost across an outage of %v, want all %d", len(losses), outage, n)
	}
	late, _ := CheckLosses(t, losses, core.LostDeadline, true)

	// The clients reconnected by themselves.
	lk, failed, err := a.acquireRetrying(ctx, "restart:after", 10*time.Second)
	if err != nil {
		t.Fatalf("acquire after the restart: %v", err)
	}
	_ = lk.Release(ctx)
	lateLo, lateHi := Spread(late)
	Figure(t, "%s restart (down %v): %s; crash and %v outage: %d of %d lost (LostDeadline), %v to %v after their deadline, none later than ttl after its last confirmed renewal was sent; no key granted while its holder still believed; clients reconnected by themselves (%d calls failed first)",
		tg.Name, down.Round(time.Millisecond), quick, outage.Round(time.Millisecond), len(losses), n, lateLo, lateHi, failed)
}

// lostInRestart checks the locks of a volatile server that restarted at
// start and came back empty: the contender takes every key as soon as it
// can, with a greater token, and every holder learns of its loss at its
// next renewal. It returns the figure of the restart.
func lostInRestart(t *testing.T, contender, a *Holders, locks []*core.Lock, start time.Time) string {
	t.Helper()
	ctx := context.Background()
	type grant struct {
		lk  *core.Lock
		at  time.Time
		err error
	}
	grants := make(chan grant, len(locks))
	for _, lk := range locks {
		go func() {
			won, _, err := contender.acquireRetrying(ctx, lk.Key(), 2*TTL)
			grants <- grant{won, time.Now(), err}
		}()
	}
	tokens := map[string]int64{}
	for _, lk := range locks {
		tokens[lk.Key()] = lk.Token()
	}
	grantedAt := map[string]time.Time{}
	var taken []*core.Lock
	for range locks {
		g := <-grants
		if g.err != nil {
			t.Fatalf("after the restart, the contender could not take a key: %v", g.err)
		}
		taken = append(taken, g.lk)
		grantedAt[g.lk.Key()] = g.at
		if g.lk.Token() <= tokens[g.lk.Key()] {
			t.Errorf("after the restart, %s was granted token %d, not greater than its holder's %d: a fenced resource could not refuse the old holder", g.lk.Key(), g.lk.Token(), tokens[g.lk.Key()])
		}
	}
	for _, old := range locks {
		select {
		case <-old.Done():
		case <-time.After(2 * TTL):
			t.Fatalf("%s still held %v after the server came back empty", old.Key(), 2*TTL)
		}
	}
	losses := a.awaitLosses(len(locks), TTL)
	if len(losses) != len(locks) {
		t.Fatalf("%d of %d locks lost after the server came back empty; want all", len(losses), len(locks))
	}
	// The store lost the locks: there is no expiry to read.
	CheckLosses(t, losses, core.LostRefused, true)
	var after []time.Duration
	var overlap time.Duration // the longest a holder still believed after the contender took its key
	for _, l := range losses {
		after = append(after, l.At.Sub(start))
		overlap = max(overlap, l.At.Sub(grantedAt[l.Key]))
	}
	for _, lk := range taken {
		_ = lk.Release(ctx)
	}
	lo, hi := Spread(after)
	return fmt.Sprintf("the server came back empty; %d of %d locks lost at their next renewal (LostRefused), %v to %v after the restart began; a second instance took each key with a greater token, while its old holder still believed for up to %v",
		len(losses), len(locks), lo, hi, overlap.Round(time.Millisecond))
}
