package faults_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/testserver"
	"github.com/leasehold/leasehold/internal/testserver/faults"
)

// TestLostReply: an Acquire whose outcome the caller never learns, although
// the server took the key: its reply is cut (PostgreSQL's one statement,
// MySQL's COMMIT), or the caller times out while the request is on its way
// (latency longer than the call's deadline). The key must be free as soon
// as Acquire has returned its error, not held by nobody for a ttl. A reply
// cut in the middle of MySQL's acquire transaction must leave nothing
// behind either.
func TestLostReply(t *testing.T) {
	const trials = 4
	forEachBackend(t, func(t *testing.T, b backend, srv *testserver.Server) {
		proxy := testserver.NewProxy(t, srv.Addr())
		store, db := openStore(t, b, srv.DSNAt(proxy.Addr()))
		db.SetMaxOpenConns(1) // the connection warm warms is the next call's
		_, direct := openStore(t, b, srv.DSN)
		h := faults.NewHolders(t, target(t, b, srv), store, "lost-reply")

		type fault struct {
			name    string
			arm     func(key string) // sets the fault up for one Acquire of key
			timeout time.Duration    // the Acquire's deadline
			taken   bool             // whether the server must have taken the key
		}
		kinds := []fault{
			{"reply cut", func(key string) { proxy.CutReply([]byte(key)) }, 10 * time.Second, b.name == "PostgreSQL"},
			// The connection has the statements prepared and was used
			// within a second, so that pgx sends the statement at once:
			// no ping, no prepare round trip.
			{"timeout with the request on its way", func(string) {
				warm(t, h)
				proxy.SetLatency(300 * time.Millisecond)
			}, 200 * time.Millisecond, b.name == "PostgreSQL"},
		}
		if b.name == "MariaDB" {
			kinds = append(kinds, fault{"COMMIT reply cut", func(string) { proxy.CutReply([]byte("COMMIT")) }, 10 * time.Second, true})
		}
		for fi, f := range kinds {
			taken, late := 0, 0
			for i := range trials {
				key := fmt.Sprintf("lost-reply:%d:%d", fi, i) // the fault's pattern must not match it
				f.arm(key)
				ctx, cancel := context.WithTimeout(context.Background(), f.timeout)
				lk, err := h.Acquire(ctx, key)
				cancel()
				proxy.SetLatency(0)
				if err == nil {
					t.Fatalf("%s: Acquire of %s succeeded (token %d); want the fault's error", f.name, key, lk.Token())
				}
				row, owner := lockRow(t, b, direct, key)
				if owner != "" && handBackRanOut(h, key) {
					// The release Acquire sends before it returns got no
					// answer within its bound: on a loaded machine the
					// release's new connection through the slow proxy
					// can take that long. The releases go on in the
					// background, and must free the key as soon as one
					// gets through, now that the latency is gone.
					late++
					freed := time.Now()
					for owner != "" && time.Since(freed) < handBackRetryBound {
						time.Sleep(10 * time.Millisecond)
						row, owner = lockRow(t, b, direct, key)
					}
					t.Logf("%s: Acquire's own release got no answer in time, so the key was still held when it returned (%v); the background releases freed it %v later", f.name, err, time.Since(freed).Round(time.Millisecond))
				}
				if owner != "" {
					t.Fatalf("%s: after Acquire failed (%v), the store holds %s for %s until its ttl", f.name, err, key, owner)
				}
				if row {
					taken++
				}
			}
			if f.taken && taken != trials {
				t.Errorf("%s: the server took the key in %d of %d trials; the scenario did not lose the reply of a granted acquire", f.name, taken, trials)
			}
			faults.Figure(t, "%s lost reply (%s): %d trials, the server took the key in %d, every key free when Acquire returned its error but in %d, whose own release got no answer in time, freed by the background releases", b.name, f.name, trials, taken, late)
		}
	})
}

// handBackRetryBound bounds the wait for a key whose release Acquire could
// not get answered before returning: the releases go on every 50 ms, each
// over a fresh connection once the proxy's latency is gone.
const handBackRetryBound = 2 * time.Second

// handBackRanOut reports whether the instance warned that the release a
// failed Acquire of key sent before returning got no answer, and that
// releases go on in the background: core's log line for it.
func handBackRanOut(h *faults.Holders, key string) bool {
	for _, w := range h.Warnings(key) {
		if strings.Contains(w.Msg, "trying again until the store answers") {
			return true
		}
	}
	return false
}

// lockRow reports whether key has a row in the locks table (an acquire of
// it reached the server and committed), and the owner of its lock if one
// is live.
func lockRow(t testing.TB, b backend, db *sql.DB, key string) (row bool, owner string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var (
		o    sql.NullString
		live bool
	)
	err := db.QueryRowContext(ctx, b.row, key).Scan(&o, &live)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return false, ""
	case err != nil:
		t.Fatal(err)
	case live:
		return true, o.String
	}
	return true, ""
}

// warm acquires and releases a key through h.
func warm(t testing.TB, h *faults.Holders) {
	t.Helper()
	lk, err := h.Acquire(context.Background(), "lost-reply:warm")
	if err != nil {
		t.Fatal(err)
	}
	if err := lk.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
}
