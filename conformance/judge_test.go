package conformance

import (
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold/core"
)

// starve keeps the only P busy for 60ms, so that the lateness meter's
// goroutine runs late by several milliseconds (see package lateness).
func starve() {
	prev := runtime.GOMAXPROCS(1)
	defer runtime.GOMAXPROCS(prev)
	for end := time.Now().Add(60 * time.Millisecond); time.Now().Before(end); {
	}
}

func TestJudgeCallsALateFailureInconclusive(t *testing.T) {
	runs := 0
	late := Case{Name: "late", Fix: "a fix that must not be shown", run: func(t testing.TB, e *env) {
		runs++
		starve()
		t.Fatalf("a lock looked free too early")
	}}
	newStore := func(testing.TB) core.LockStore { return core.NewMemoryStore() }
	// TTL 6ms: the case tolerates 1ms of lateness.
	o := judge(t, late, newStore, Options{TTL: 6 * time.Millisecond})
	msg := strings.Join(o.messages, "\n")
	if runs != 2 {
		t.Errorf("the late case ran %d times; want 2 (once more after the first late failure)", runs)
	}
	if !o.failed || !strings.HasPrefix(msg, "inconclusive: this process ran ") || strings.Contains(msg, "Usual fix") || !strings.Contains(msg, "a lock looked free too early") {
		t.Errorf("verdict = %v; want an inconclusive failure that quotes the case and names no fix", o)
	}

	runs = 0
	proven := Case{Name: "proven", Fix: "the fix", run: func(t testing.TB, e *env) {
		runs++
		starve()
		proof(t, "two owners hold one key")
	}}
	o = judge(t, proven, newStore, Options{TTL: 6 * time.Millisecond})
	if runs != 1 || !o.failed || strings.Contains(strings.Join(o.messages, "\n"), "inconclusive") {
		t.Errorf("a proven failure: ran %d times, verdict %v; want one run and a plain failure", runs, o)
	}

	runs = 0
	onTime := Case{Name: "on-time", Fix: "the fix", run: func(t testing.TB, e *env) {
		runs++
		t.Fatalf("broken")
	}}
	o = judge(t, onTime, newStore, Options{})
	if runs != 1 || !o.failed || !strings.Contains(strings.Join(o.messages, "\n"), "broken") {
		t.Errorf("a failure on time: ran %d times, verdict %v; want one run and the failure", runs, o)
	}
}
