package conformance

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

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
	definite bool          // a failure that no lateness of the process explains (see caseTB.proof)
	slowest  time.Duration // the slowest store call of the case (see noteCall)
	messages []string
	logs     []string
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
func (r *recorder) Log(args ...any)                 { r.log(sprintln(args...)) }
func (r *recorder) Logf(format string, args ...any) { r.log(fmt.Sprintf(format, args...)) }

func (r *recorder) log(msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.logs = append(r.logs, msg)
}

// noteCall records that a store call of the case took d.
func (r *recorder) noteCall(d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.slowest = max(r.slowest, d)
}

// proven marks the failures as proof against the store, whatever the
// process's lateness.
func (r *recorder) proven() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.definite = true
}
func (r *recorder) Error(args ...any) { r.record(true, false, fmt.Sprint(args...)) }
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
	definite        bool          // the failure is proof whatever the process's lateness
	slowest         time.Duration // the slowest store call of the case
	messages        []string
	logs            []string
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

// pending is a case running on a recorder in a goroutine of its own.
type pending struct {
	r    *recorder
	done chan struct{}
}

// startRecorded starts case c against newStore with opts on a recorder
// whose other methods (Name, TempDir, ...) are t's.
func startRecorded(t testing.TB, c Case, newStore func(testing.TB) core.LockStore, opts Options) *pending {
	p := &pending{r: &recorder{TB: t}, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		defer func() {
			for i := len(p.r.cleanups) - 1; i >= 0; i-- {
				p.r.cleanups[i]()
			}
		}()
		runCase(p.r, c, newStore, opts)
	}()
	return p
}

// wait returns what the case reported, once it has ended and its cleanups
// have run.
func (p *pending) wait() outcome {
	<-p.done
	p.r.mu.Lock()
	defer p.r.mu.Unlock()
	return outcome{failed: p.r.failed, skipped: p.r.skipped, definite: p.r.definite, slowest: p.r.slowest, messages: p.r.messages, logs: p.r.logs}
}

// report hands an outcome to the real test.
func (o outcome) report(t testing.TB) {
	t.Helper()
	for _, l := range o.logs {
		t.Log(l)
	}
	switch {
	case o.failed:
		t.Fatal(strings.Join(o.messages, "\n"))
	case o.skipped:
		t.Skip(strings.Join(o.messages, "\n"))
	}
}
