// Package integration tests the rueidisstore driver against real servers:
// the conformance kit on a standalone Redis and on a Redis Cluster (a
// Ginkgo suite, labelled "redis" and "redis-cluster"), keys that need
// escaping on the Cluster, fencing after Redis lost its keys (a private
// redis-server restarted without persistence), WAIT for replicas, listing,
// the release (by core.Locks) of an acquisition whose reply was lost, and the paired
// benchmark against raw rueidis calls. It is a module of its own so that the
// driver's module needs nothing but its run-time dependencies.
package integration
