// Package faults puts a store through faults on a private server of the
// test's own (see testserver.PrivatePostgres and its siblings): the server
// restarts or crashes while locks are held, the network to it stalls, and
// every connection is reset again and again. Each scenario checks what
// leasehold promises then: no key granted to a second holder while the
// first still believes it holds it, every holder told of its loss
// ([core.LockLostError]) before the store can expire its lock, nothing left
// locked, and clients that reconnect with no action from the application.
// It logs its figures as "figure:" lines, for docs/production.md.
//
// A driver's test describes its server as a [Target] and calls the
// scenarios:
//
//	func TestRestart(t *testing.T) { faults.Restart(t, target(t, testserver.PrivateRedis(t))) }
//
// The scenarios sleep: they run on a real server, in real time, with
// locks of [TTL].
package faults

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/leasehold/leasehold/core"
	"github.com/leasehold/leasehold/internal/testserver"
)

// TTL is the ttl of the scenarios' locks: short, so that a scenario runs in
// seconds, and long next to a loopback round trip.
const TTL = 2 * time.Second

// Target is a store on a private server, as a scenario needs it.
type Target struct {
	// Name names the server in messages and figures ("PostgreSQL").
	Name string
	// Server is the private server, which the scenarios restart, kill or
	// reach through a [testserver.Proxy].
	Server *testserver.Server
	// Open returns a store on a new client of the server, reached at addr
	// (host:port): the server's own address, or a proxy's in front of it.
	// The store's schema is in place once it returns, and its client is
	// closed when t ends.
	Open func(t testing.TB, addr string) core.LockStore
	// Expiry reads, on the server itself (never through a proxy), when the
	// lock of owner on key expires: an error if the server cannot say (it
	// is down) or owner holds no lock on key. The server runs on this
	// host, so its clock is the test's.
	Expiry func(ctx context.Context, key, owner string) (time.Time, error)
	// Volatile marks a server that keeps no lock across a restart, such as
	// Redis without persistence: it comes back empty.
	Volatile bool
}

// Figure logs one measured figure, for docs/production.md.
func Figure(t testing.TB, format string, args ...any) {
	t.Helper()
	t.Logf("figure: %s", fmt.Sprintf(format, args...))
}

// Spread returns the minimum and maximum of ds, rounded for the figures.
func Spread(ds []time.Duration) (lo, hi time.Duration) {
	if len(ds) == 0 {
		return 0, 0
	}
	lo, hi = slices.Min(ds), slices.Max(ds)
	return lo.Round(100 * time.Microsecond), hi.Round(100 * time.Microsecond)
}

// BurnCPU keeps every core busy until the test ends, as a loaded host does:
// timers fire late, goroutines wait to run.
func BurnCPU(t testing.TB) {
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			x := 0
			for {
				select {
				case <-stop:
					return
				default:
				}
				for i := range 100000 {
					x += i
				}
			}
		})
	}
	t.Cleanup(func() { close(stop); wg.Wait() })
}

// retry calls f until it succeeds or limit has passed, sleeping a little
// between tries, and returns the last error and how many tries failed.
// After a restart or a reset, a client whose connection broke may fail a
// call before it dials again.
func retry(limit time.Duration, f func() error) (failed int, err error) {
	end := time.Now().Add(limit)
	for {
		if err = f(); err == nil || time.Now().After(end) {
			return failed, err
		}
		failed++
		time.Sleep(20 * time.Millisecond)
	}
}
