package conformance

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/leasehold/leasehold/core"
)

// recorder is a testing.TB that records what a case reports instead of
// failing the real test, so the kit's own tests can run a case against a
// broken store and check that it fails, and how. Like testing.T, FailNow
// and SkipNow end the calling goroutine with runtime.Goexit, so a case runs
// in a goroutine of its own (see runRecorded).
type recorder struct {
	testing.TB // the real test: for methods the kit does not use; never its failure methods

	mu       sync.Mutex
	failed   bool
	skipped  bool
	messages []string
	cleanups []func()
}

func (r *recorder) record(failed, skipped bool, msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failed = r.failed || failed
	r.skipped = r.skipped || skipped
	if msg != "" {
		r.messages = append(r.messages, msg)
	}
}

func (r *recorder) Helper()                         {}
func (r *recorder) Log(args ...any)                 {}
func (r *recorder) Logf(format string, args ...any) {}
func (r *recorder) Error(args ...any)               { r.record(true, false, fmt.Sprint(args...)) }
func (r *recorder) Errorf(format string, args ...any) {
	r.record(true, false, fmt.Sprintf(format, args...))
}
func (r *recorder) Fail()    { r.record(true, false, "") }
func (r *recorder) FailNow() { r.record(true, false, ""); runtime.Goexit() }
func (r *recorder) Fatal(args ...any) {
	r.record(true, false, fmt.Sprint(args...))
	runtime.Goexit()
}
func (r *recorder) Fatalf(format string, args ...any) {
	r.record(true, false, fmt.Sprintf(format, args...))
	runtime.Goexit()
}
func (r *recorder) Skip(args ...any) {
	r.record(false, true, fmt.Sprint(args...))
	runtime.Goexit()
}
func (r *recorder) Skipf(format string, args ...any) {
	r.record(false, true, fmt.Sprintf(format, args...))
	runtime.Goexit()
}
func (r *recorder) SkipNow() { r.record(false, true, ""); runtime.Goexit() }
func (r *recorder) Failed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.failed
}
func (r *recorder) Skipped() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.skipped
}
func (r *recorder) Cleanup(f func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cleanups = append(r.cleanups, f)
}

// outcome is what a recorded case reported.
type outcome struct {
	failed, skipped bool
	messages        []string
}

func (o outcome) String() string {
	switch {
	case o.failed:
		return "FAIL: " + strings.Join(o.messages, " | ")
	case o.skipped:
		return "SKIP: " + strings.Join(o.messages, " | ")
	}
	return "pass"
}

// runRecorded runs case c against newStore with opts, as runCase does for
// Run and Specs, but on a recorder, and returns what it reported. A panic in
// the case propagates, as it would under go test.
func runRecorded(t *testing.T, c Case, newStore func(testing.TB) core.LockStore, opts Options) outcome {
	t.Helper()
	r := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		runCase(r, c, newStore, opts)
	}()
	<-done
	for i := len(r.cleanups) - 1; i >= 0; i-- {
		r.cleanups[i]()
	}
	return outcome{failed: r.failed, skipped: r.skipped, messages: r.messages}
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
