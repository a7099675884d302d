package conformance

import (
	"strings"
	"testing"

	"github.com/leasehold/leasehold/core"
)

// runRecorded runs case c against newStore with opts, as runCase does for
// Run and Declare, but on a recorder, and returns what it reported. A panic in
// the case propagates, as it would under go test.
func runRecorded(t *testing.T, c Case, newStore func(testing.TB) core.LockStore, opts Options) outcome {
	t.Helper()
	return startRecorded(t, c, newStore, opts).wait()
}

func TestRecorderSeesFailuresAndSkips(t *testing.T) {
	store := core.NewMemoryStore()
	newStore := func(testing.TB) core.LockStore { return store }
	var afterFatal, cleaned bool
	fatal := Case{Name: "fatal", run: func(t testing.TB, e *env) {
		t.Cleanup(func() { cleaned = true })
		t.Fatalf("boom %d", 1)
		afterFatal = true
	}}
	if o := runRecorded(t, fatal, newStore, Options{}); !o.failed || o.skipped || len(o.messages) != 1 || o.messages[0] != "boom 1" {
		t.Errorf("Fatalf recorded as %v", o)
	}
	if afterFatal {
		t.Error("the case went on after Fatalf")
	}
	if !cleaned {
		t.Error("the case's cleanup did not run")
	}
	errs := Case{Name: "errors", run: func(t testing.TB, e *env) {
		t.Errorf("one")
		t.Errorf("two")
	}}
	if o := runRecorded(t, errs, newStore, Options{}); !o.failed || len(o.messages) != 2 {
		t.Errorf("two Errorf recorded as %v", o)
	}
	skip := Case{Name: "skip", run: func(t testing.TB, e *env) { t.Skip("why") }}
	if o := runRecorded(t, skip, newStore, Options{}); o.failed || !o.skipped {
		t.Errorf("Skip recorded as %v", o)
	}
	pass := Case{Name: "pass", run: func(t testing.TB, e *env) {}}
	if o := runRecorded(t, pass, newStore, Options{}); o.failed || o.skipped {
		t.Errorf("an empty case recorded as %v", o)
	}
	if o := runRecorded(t, pass, newStore, Options{Callers: 1}); !o.failed || !strings.Contains(o.String(), "Callers") {
		t.Errorf("bad options recorded as %v", o)
	}
	if o := runRecorded(t, pass, func(testing.TB) core.LockStore { return nil }, Options{}); !o.failed {
		t.Errorf("a nil store recorded as %v", o)
	}
}
