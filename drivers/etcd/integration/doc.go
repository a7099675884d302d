// Package integration tests the etcdstore driver against real etcd
// members (internal/testserver/etcdserver), or the server named by
// LEASEHOLD_TEST_ETCD: the conformance kit as a Ginkgo suite labelled
// "etcd", on a member in a process of its own, and the fault scenarios on
// a three-member cluster in the test process, whose leader is killed, or
// one of whose members is cut off from the others, under held locks. It is a module of its own so that the
// driver's module needs nothing but its run-time dependencies.
package integration
