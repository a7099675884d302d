// Package ginkgokit runs the leasehold conformance kit as Ginkgo specs.
//
// It is a module of its own so that Ginkgo and Gomega reach only the
// go.sum of a store author who runs the kit under Ginkgo; one who calls
// [conformance.Run] from go test imports package conformance alone.
//
//	var _ = Describe("redis store", Label("conformance"), func() {
//		ginkgokit.Specs(newStore, conformance.Options{})
//	})
//
// docs/conformance.md in the leasehold repository, "Running it with
// Ginkgo", describes the suite.
package ginkgokit

import (
	"testing"

	"github.com/leasehold/leasehold/conformance"
	"github.com/leasehold/leasehold/core"
	"github.com/onsi/ginkgo/v2"
)

// Specs adds one Ginkgo spec (It) per case of the kit to the container it is
// called in, so the kit runs beside the user's own specs, under their
// Describe, labels and decorators. Call it while Ginkgo builds the spec
// tree, typically inside a Describe:
//
//	var _ = Describe("my store", Label("conformance"), func() {
//		ginkgokit.Specs(func(t testing.TB) core.LockStore { return newTestStore(t) }, conformance.Options{})
//	})
//
// newStore is called as under [conformance.Run]: for each case, again for
// each racing caller and instance, and should return a new store value on a
// new client each time where it can, over a database created once for the
// container (in a BeforeAll, say). Each spec uses [ginkgo.GinkgoTB] as its
// testing.TB. Without opts.AdvanceTime, the cases marked
// [conformance.Case.Waits] sleep in real time, so, as under Run, they run
// concurrently: the first of their specs starts all of them, and each of
// their specs reports its own case's outcome when it ends (see
// [conformance.Declare], which Specs calls with ginkgo.It).
func Specs(newStore func(t testing.TB) core.LockStore, opts conformance.Options) {
	conformance.Declare(func(name string, body func(t testing.TB)) {
		ginkgo.It(name, func() { body(ginkgo.GinkgoTB()) })
	}, newStore, opts)
}
