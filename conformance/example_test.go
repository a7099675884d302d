package conformance_test

import (
	"flag"
	"fmt"
	"testing"
	"time"

	"github.com/leasehold/leasehold/conformance"
	"github.com/leasehold/leasehold/core"
)

// A driver's test file runs the whole kit from one test function. This one
// tests core.MemoryStore on a manual clock, so the kit never sleeps; a
// driver for a real server would open a client in newStore and leave
// AdvanceTime nil.
func ExampleRun() {
	// In a driver's _test.go file this is func TestConformance(t *testing.T).
	testConformance := func(t *testing.T) {
		clock := core.NewManualClock(time.Unix(1_700_000_000, 0))
		store := core.NewMemoryStore(core.WithMemoryClock(clock))
		// The store's ResetTokens(ctx) error method is found and used
		// by the token-floor case.
		conformance.Run(t, func(t testing.TB) core.LockStore { return store }, conformance.Options{
			AdvanceTime: clock.Advance,
		})
	}

	// go test calls test functions itself; an example has to ask.
	fmt.Println("conformance kit passed:", runAsTest("TestConformance", testConformance))
	// Output: conformance kit passed: true
}

// runAsTest runs f as go test runs a test function, and reports whether it
// passed. An example gets no *testing.T, so it borrows testing.RunTests,
// with the flags that would filter, repeat or narrate the run set aside:
// the example's output must not depend on them.
func runAsTest(name string, f func(t *testing.T)) bool {
	for flagName, value := range map[string]string{"test.run": "", "test.skip": "", "test.v": "false", "test.count": "1", "test.failfast": "false"} {
		if fl := flag.Lookup(flagName); fl != nil {
			old := fl.Value.String()
			_ = fl.Value.Set(value)
			defer fl.Value.Set(old)
		}
	}
	matchAll := func(pat, str string) (bool, error) { return true, nil }
	return testing.RunTests(matchAll, []testing.InternalTest{{Name: name, F: f}})
}
