package integration_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// callers race on a pool of poolSize connections.
const callers = 32

// Of any number of concurrent acquirers of a free key, exactly one wins,
// and each round's token is greater than the last.
func TestRaceOneWinner(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		s, _ := newStore(t, b)
		var last int64
		for round := range 15 {
			key := "race" // the same key every round: the floor path
			if round%3 == 0 {
				key = fmt.Sprint("fresh-", round) // a new key: the insert path
			}
			start := make(chan struct{})
			var wg sync.WaitGroup
			var winners atomic.Int32
			var winner atomic.Value
			var token atomic.Int64
			for i := range callers {
				wg.Go(func() {
					<-start
					owner := fmt.Sprint("caller", i)
					tok, ok, err := s.Acquire(context.Background(), key, owner, time.Minute)
					if err != nil {
						t.Errorf("Acquire: %v", err)
						return
					}
					if ok {
						winners.Add(1)
						winner.Store(owner)
						token.Store(tok)
					}
				})
			}
			close(start)
			wg.Wait()
			if n := winners.Load(); n != 1 {
				t.Fatalf("round %d: %d winners, want 1", round, n)
			}
			if tok := token.Load(); tok <= last {
				t.Fatalf("round %d: token %d after %d", round, tok, last)
			} else {
				last = tok
			}
			wantRelease(t, s, key, winner.Load().(string), true)
		}
	})
}

// Callers loop over a few keys, acquiring and releasing: at most one holder
// per key at any time, tokens of each key grow, and no call fails (MySQL's
// deadlocks, if any, are retried inside Acquire).
func TestRaceMutualExclusion(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		s, _ := newStore(t, b)
		const keys = 4
		var (
			mu      sync.Mutex
			holders [keys]int
			last    [keys]int64
			wins    atomic.Int64
			tries   atomic.Int64
		)
		deadline := time.Now().Add(1500 * time.Millisecond)
		var wg sync.WaitGroup
		for i := range callers {
			wg.Go(func() {
				owner := fmt.Sprint("caller", i)
				for n := 0; time.Now().Before(deadline); n++ {
					k := (i + n) % keys
					key := fmt.Sprint("k", k)
					tries.Add(1)
					tok, ok, err := s.Acquire(context.Background(), key, owner, time.Minute)
					if err != nil {
						t.Errorf("Acquire: %v", err)
						return
					}
					if !ok {
						continue
					}
					wins.Add(1)
					mu.Lock()
					holders[k]++
					h, prev := holders[k], last[k]
					last[k] = tok
					mu.Unlock()
					if h != 1 || tok <= prev {
						t.Errorf("key %s: %d holders, token %d after %d", key, h, tok, prev)
						return
					}
					ok, err = s.Renew(context.Background(), key, owner, time.Minute)
					if err != nil || !ok {
						t.Errorf("Renew by holder = %v, %v", ok, err)
						return
					}
					mu.Lock()
					holders[k]--
					mu.Unlock()
					if ok, err := s.Release(context.Background(), key, owner); err != nil || !ok {
						t.Errorf("Release by holder = %v, %v", ok, err)
						return
					}
				}
			})
		}
		wg.Wait()
		t.Logf("%s: %d acquisitions of %d attempts", b.name, wins.Load(), tries.Load())
		if wins.Load() < keys {
			t.Fatalf("only %d acquisitions", wins.Load())
		}
	})
}
