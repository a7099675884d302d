package conformance

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold/conformance/lateness"
	"github.com/leasehold/leasehold/core"
)

// tolerance is how late the test process may run during a case before a
// failure of the case stops being evidence against the store: a sixth of
// the ttl, the margin of the kit's expiry checks (see heldCheck). Calls
// that time out, or locks that look expired early, are what a process
// late by more than that produces on a correct store.
func (o Options) tolerance() time.Duration { return o.TTL / 6 }

// judge runs case c and returns its verdict under the kit's lateness rule:
// while the case runs, a [lateness.Meter] measures how late the test
// process itself runs, and how far the wall clock, by which stores time
// leases, jumps. A failure while the process ran later than
// [Options] tolerate (a sixth of the ttl) is not evidence against the
// store: the case runs again, once, and if it fails again while the
// process was late again, the verdict is inconclusive, with the measured
// lateness and what to do, and without a usual fix. A store call of the
// kit's that took longer than the tolerance explains a failure the same
// way: the store may have run it after the ttl the check counts (a call
// queued behind others on a single-writer store, under load). Under -short an
// inconclusive case is skipped; otherwise it fails. A failure the case marks
// as proof (see proof) stands whatever the lateness.
func judge(t testing.TB, c Case, newStore func(testing.TB) core.LockStore, opts Options) outcome {
	t.Helper()
	o, err := opts.withDefaults()
	if err != nil {
		return outcome{failed: true, messages: []string{err.Error()}}
	}
	tol := o.tolerance()
	var out outcome
	var m *lateness.Meter
	for attempt := 0; attempt < 2; attempt++ {
		m = lateness.Start()
		out = startRecorded(t, c, newStore, opts).wait()
		m.Stop()
		if !out.failed || out.definite || (!m.Explains(tol) && out.slowest <= tol) {
			return out
		}
		t.Logf("conformance: case %s failed while this process ran %v late, the wall clock jumped %v and its slowest store call took %v (the case tolerates %v); running it again", c.Name, m.Worst().Round(time.Millisecond), m.Jump(), out.slowest.Round(time.Millisecond), tol)
	}
	verdict := m.Verdict(tol)
	if !m.Explains(tol) {
		verdict = fmt.Sprintf("inconclusive: a store call of the case took, or one of its sleeps overslept by, at least %d ms (the check tolerates %d ms), so the store may have run a call after the ttl the check counts; rerun on a quieter machine, with a pool of at least Options.Callers connections, or raise the ttl",
			out.slowest.Milliseconds(), tol.Milliseconds())
	}
	msg := verdict + " (Options.TTL). The case failed twice, each time while the process was late or a call slow; what it saw proves nothing about the store:\n" + withoutFix(strings.Join(out.messages, "\n"))
	if testing.Short() {
		return outcome{skipped: true, messages: []string{msg}, logs: out.logs}
	}
	return outcome{failed: true, messages: []string{msg}, logs: out.logs}
}

// withoutFix drops the "Usual fix: " lines of failure messages: an
// inconclusive verdict names no fix.
func withoutFix(msg string) string {
	lines := strings.Split(msg, "\n")
	kept := lines[:0]
	for _, l := range lines {
		if !strings.HasPrefix(l, "Usual fix: ") {
			kept = append(kept, l)
		}
	}
	return strings.Join(kept, "\n")
}
