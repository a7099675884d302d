// Package conformance is a test kit that proves a [core.LockStore]
// implementation follows the rules documented on that interface: atomic
// methods, expiry on the store's clock, "expired means gone", growing fencing
// tokens with a per-key floor, exact keys, and errors that are errors.
//
// A driver runs the whole kit from one test, with the standard testing
// package:
//
//	func TestConformance(t *testing.T) {
//		conformance.Run(t, newStore, conformance.Options{})
//	}
//
// or, in a Ginkgo suite, from inside its own container, through package
// github.com/leasehold/leasehold/conformance/ginkgokit (a module of its own,
// so that this one needs no Ginkgo):
//
//	var _ = Describe("redis store", func() {
//		ginkgokit.Specs(newStore, conformance.Options{})
//	})
//
// The cases come in groups. The "store" cases call the store directly.
// The "instances" cases run three [core.Locks] instances on the one store,
// each on a [core.ManualClock] of its own, so that a case can pause one (its
// clock stops, as a process stopped by a long garbage collection does) while
// the store's own clock decides expiry; they check jobs (one instance per
// tick, no overlapping runs, hand-over on Close and after a pause, fencing)
// and elections (one leader, hand-over on Close and after a pause).
//
// Two more groups check optional interfaces when the store implements
// them, and are skipped, saying why, when it does not: "lister"
// ([core.Lister]) and "batch" ([core.BatchRenewer], renewal of many leases
// in one call).
//
// Each case is a function of a testing.TB; [Cases] lists them, each with a
// sentence saying which bug it catches. A failure message says what the store
// answered and what the contract requires. Every case uses fresh random keys
// under [Options.KeyPrefix] and random owners, so several runs can share one
// server.
//
// The race cases ([Case.Concurrent]) only mean something against a store whose
// calls overlap, such as a real server reached through a connection pool.
// The expiry cases and the instance cases ([Case.Waits]) sleep in real time
// unless [Options.AdvanceTime] moves the store's clock.
//
// docs/conformance.md in the leasehold repository describes how to run the
// kit in CI.
package conformance
