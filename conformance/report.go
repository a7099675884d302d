package conformance

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// caseTB is the testing.TB a case runs with: every failure it reports ends
// with the case's usual fix, so that a red run says what to change, not
// only what went wrong.
type caseTB struct {
	testing.TB
	fix string
}

func (t *caseTB) withFix(msg string) string {
	if t.fix == "" {
		return msg
	}
	return msg + "\nUsual fix: " + t.fix
}

// Error reports a failure, with the case's usual fix.
func (t *caseTB) Error(args ...any) {
	t.TB.Helper()
	t.TB.Error(t.withFix(sprintln(args...)))
}

// Errorf reports a failure, with the case's usual fix.
func (t *caseTB) Errorf(format string, args ...any) {
	t.TB.Helper()
	t.TB.Error(t.withFix(fmt.Sprintf(format, args...)))
}

// Fatal reports a failure, with the case's usual fix, and ends the case.
func (t *caseTB) Fatal(args ...any) {
	t.TB.Helper()
	t.TB.Fatal(t.withFix(sprintln(args...)))
}

// Fatalf reports a failure, with the case's usual fix, and ends the case.
func (t *caseTB) Fatalf(format string, args ...any) {
	t.TB.Helper()
	t.TB.Fatal(t.withFix(fmt.Sprintf(format, args...)))
}

// recorderOf returns the recorder under t, if any.
func recorderOf(t testing.TB) *recorder {
	if ct, ok := t.(*caseTB); ok {
		t = ct.TB
	}
	r, _ := t.(*recorder)
	return r
}

// noteCall records that a store call made for the case took d (see judge).
func noteCall(t testing.TB, d time.Duration) {
	if r := recorderOf(t); r != nil {
		r.noteCall(d)
	}
}

// proof ends the case with a failure that proves the store broken whatever
// the machine's load: an answer no timing explains (two owners of one key,
// a token that went back). The kit's lateness rule (see judge) does not turn
// it into an inconclusive verdict.
func proof(t testing.TB, format string, args ...any) {
	t.Helper()
	if r := recorderOf(t); r != nil {
		r.proven()
	}
	t.Fatalf(format, args...)
}

// sprintln formats args as t.Error does, without the final newline.
func sprintln(args ...any) string { return strings.TrimSuffix(fmt.Sprintln(args...), "\n") }

// failWith ends the case with a failure whose usual fix is not the case's
// (a store that returns errors, a kit that went wrong): fix replaces it.
func failWith(t testing.TB, fix, format string, args ...any) {
	t.Helper()
	if ct, ok := t.(*caseTB); ok {
		t = ct.TB
	}
	t.Fatal(fmt.Sprintf(format, args...) + "\nUsual fix: " + fix)
}

// Usual fixes of failures that are not the case's own.
const (
	fixStoreError      = "make sure the store is reachable, answers within Options.Timeout, and, behind a connection pool, has at least Options.Callers connections; then run the case again. If the error says the lock is not held or not obtained, answer false instead: false is the store's decision, an error a call that reached none."
	fixKitBug          = "none in the store: the kit itself went wrong; please report it to leasehold with this message."
	fixTTLForPrecision = "raise Options.TTL until the lateness the store declares for it is at most half of it."
	fixLateExpiry      = "free a lock once its ttl has passed on the store's clock, or declare how late the store may free it (core.ExpiryPrecisioner); a store that frees expired locks by a background scan must keep up with many locks expiring at once."
	fixTooSlow         = "make the store answer well within Options.TTL/5 while Options.Callers/2 calls run at once (behind a pool, give it at least Options.Callers connections), or raise Options.TTL; on a busy machine, run the kit again on a quieter one."
)

// skip skips the case, saying why and how to run it. go test shows a
// skip's message only with -v, so without -v the message also goes to
// standard error, which go test shows when it runs in the package's
// directory (go test ./... shows a passing package's output only with -v).
func skip(t testing.TB, name, why, enable string) {
	t.Helper()
	msg := fmt.Sprintf("conformance: case %s SKIPPED: %s. To run it, %s.", name, why, enable)
	if !testing.Verbose() {
		fmt.Fprintln(os.Stderr, msg)
	}
	t.Skip(msg)
}

// show renders a key for a failure message so that different keys look
// different: quoted, and, when it holds anything but printable ASCII, also
// with every other character as its code point ("é" and "e" + U+0301 quote
// alike, "\u00e9" and "e\u0301" do not). A long key is shortened to its
// first 50 and last 10 characters.
func show(key string) string {
	head, tail := key, ""
	n := utf8.RuneCountInString(key)
	if n > 80 {
		r := []rune(key)
		head, tail = string(r[:50]), string(r[n-10:])
	}
	quote := func(format string) string {
		if tail == "" {
			return fmt.Sprintf(format, head)
		}
		return fmt.Sprintf(format+"…"+format, head, tail)
	}
	out := quote("%q")
	if ascii := quote("%+q"); ascii != out {
		out += " (" + ascii + ")"
	}
	if tail != "" {
		out += fmt.Sprintf(" (%d characters, %d bytes)", n, len(key))
	}
	return out
}
