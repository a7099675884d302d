// Package coretest holds the small helpers that tests of code built on
// [github.com/leasehold/leasehold/core] keep needing, so that each exists
// once: a [core.Locks] that logs nowhere and is closed when the test ends
// ([NewLocks]), a buffer that several goroutines may log into at once
// ([LogBuffer]), a resource that refuses a write whose fencing token is
// lower than the highest it has seen ([FencedResource]), and an instance
// holding many locks on a manual clock, for benchmarks of renewal at scale
// ([HoldMany], or [HoldSteadily] to take them at a steady rate and count
// the store's calls of every renewal period).
//
// It imports only the standard library and core, and lives in core's module,
// so importing it adds nothing to a go.mod.
package coretest
