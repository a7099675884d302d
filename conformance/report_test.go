package conformance

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold/core"
)

func TestShowMakesDifferentKeysLookDifferent(t *testing.T) {
	for _, tc := range []struct{ key, want string }{
		{"plain:key", `"plain:key"`},
		{"a ", `"a "`},
		{"line\nbreak", `"line\nbreak"`},
		{"k:\u00e9", `"k:é" ("k:\u00e9")`},
		{"k:e\u0301", "\"k:e\u0301\" (\"k:e\\u0301\")"},
		{"k:\u212b", "\"k:\u212b\" (\"k:\\u212b\")"},
		{"k:\u200b", `"k:\u200b"`}, // invisible: %q escapes it already
		{strings.Repeat("x", 99) + "é", `"` + strings.Repeat("x", 50) + `"…"` + strings.Repeat("x", 9) + `é" ("` + strings.Repeat("x", 50) + `"…"` + strings.Repeat("x", 9) + `\u00e9") (100 characters, 101 bytes)`},
	} {
		if got := show(tc.key); got != tc.want {
			t.Errorf("show(%+q) = %s, want %s", tc.key, got, tc.want)
		}
	}
	if show("k:\u00e9") == show("k:e\u0301") {
		t.Error(`"é" and "e" + U+0301 look alike`)
	}
}

func TestFailuresEndWithTheUsualFix(t *testing.T) {
	newStore := func(testing.TB) core.LockStore { return core.NewMemoryStore() }
	c := Case{Name: "c", Fix: "do the thing.", run: func(t testing.TB, e *env) {
		t.Errorf("first %d", 1)
		t.Error("second", 2)
		t.Fatal("third")
	}}
	o := runRecorded(t, c, newStore, Options{})
	want := []string{"first 1\nUsual fix: do the thing.", "second 2\nUsual fix: do the thing.", "third\nUsual fix: do the thing."}
	if strings.Join(o.messages, "|") != strings.Join(want, "|") {
		t.Errorf("messages %q, want %q", o.messages, want)
	}
	// A store error is not the case's bug: it gets its own fix.
	c.run = func(t testing.TB, e *env) { callFailed(t, "Acquire(…)", os.ErrDeadlineExceeded) }
	o = runRecorded(t, c, newStore, Options{})
	if len(o.messages) != 1 || !strings.HasSuffix(o.messages[0], "\nUsual fix: "+fixStoreError) {
		t.Errorf("store error reported as %q, want it to end with the store-error fix", o.messages)
	}
}

// TestSkipIsVisibleWithoutV runs the token-floor case without ResetTokens
// in a child test process, as go test runs a package without -v, and checks
// that its output says the case was skipped and how to run it.
func TestSkipIsVisibleWithoutV(t *testing.T) {
	if os.Getenv("LEASEHOLD_CONFORMANCE_SKIP_CHILD") == "1" {
		clock := core.NewManualClock(time.Unix(1_700_000_000, 0))
		// Only the LockStore methods: no ResetTokens, no List.
		store := struct{ core.LockStore }{core.NewMemoryStore(core.WithMemoryClock(clock))}
		Run(t, func(testing.TB) core.LockStore { return store }, Options{AdvanceTime: clock.Advance})
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestSkipIsVisibleWithoutV$/^token-floor-after-reset$", "-test.count=1")
	cmd.Env = append(os.Environ(), "LEASEHOLD_CONFORMANCE_SKIP_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child test: %v\n%s", err, out)
	}
	if strings.Contains(string(out), "--- SKIP") {
		t.Fatalf("the child ran verbose:\n%s", out)
	}
	for _, want := range []string{
		"conformance: case token-floor-after-reset SKIPPED: the store has no ResetTokens(ctx) error method and Options.ResetTokens is nil",
		"To run it, give the store a ResetTokens(ctx context.Context) error method (see conformance.TokenResetter), or set Options.ResetTokens",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output of go test without -v lacks %q:\n%s", want, out)
		}
	}
}
