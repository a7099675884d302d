package testserver

import (
	"flag"
	"slices"
	"testing"
)

// TestPaired: store and raw run alone, then in one loop that alternates
// which goes first.
func TestPaired(t *testing.T) {
	bt := flag.Lookup("test.benchtime")
	old := bt.Value.String()
	if err := flag.Set("test.benchtime", "4x"); err != nil {
		t.Fatal(err)
	}
	defer flag.Set("test.benchtime", old) //nolint:errcheck // it was set before

	var calls []string
	call := func(name string) func() error {
		return func() error { calls = append(calls, name); return nil }
	}
	testing.Benchmark(func(b *testing.B) { Paired(b, call("s"), call("r"), nil, "") })
	want := []string{"s", "s", "s", "s", "r", "r", "r", "r", "s", "r", "r", "s", "s", "r", "r", "s"}
	if !slices.Equal(calls, want) {
		t.Errorf("calls %q, want %q", calls, want)
	}
}
