package ginkgokit_test

import (
	"context"
	"flag"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leasehold/leasehold/conformance"
	"github.com/leasehold/leasehold/conformance/ginkgokit"
	"github.com/leasehold/leasehold/core"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// ginkgoRan guards RunSpecs, which Ginkgo allows once per process.
var ginkgoRan atomic.Bool

// TestGinkgo runs the kit through Specs, as a Ginkgo user would, beside a
// spec of the user's own in the same container. Ginkgo refuses to run a
// suite twice in one process, so under go test -count=N (N > 1) it skips,
// and leaves the repeats to the plain tests; ginkgo --repeat=N repeats it.
func TestGinkgo(t *testing.T) {
	if f := flag.Lookup("test.count"); f != nil && f.Value.String() != "1" {
		t.Skipf("Ginkgo refuses go test -count=%s; run ginkgo --repeat=N to repeat this suite", f.Value)
	}
	if ginkgoRan.Swap(true) {
		t.Skip("Ginkgo runs a suite once per process; run ginkgo --repeat=N to repeat it")
	}
	RegisterFailHandler(Fail)
	RunSpecs(t, "conformance kit through ginkgokit.Specs")
}

var _ = Describe("core.MemoryStore", Label("conformance"), func() {
	var (
		clock *core.ManualClock
		store *core.MemoryStore
	)
	BeforeEach(func() {
		clock = core.NewManualClock(time.Unix(1_700_000_000, 0))
		store = core.NewMemoryStore(core.WithMemoryClock(clock))
	})

	ginkgokit.Specs(func(testing.TB) core.LockStore { return store }, conformance.Options{
		AdvanceTime: func(d time.Duration) { clock.Advance(d) },
	})

	It("composes with the user's own specs", func() {
		token, ok, err := store.Acquire(context.Background(), "user:spec", "me", time.Minute)
		Expect(err).NotTo(HaveOccurred())
		Expect(ok).To(BeTrue())
		Expect(token).To(BeNumerically(">", 0))
	})
})

// In real time, the waiting cases run concurrently under Specs too: each
// spec still reports its own case.
var _ = Describe("core.MemoryStore in real time", Label("conformance"), func() {
	store := core.NewMemoryStore()
	ginkgokit.Specs(func(testing.TB) core.LockStore { return store }, conformance.Options{TTL: time.Second})
})
