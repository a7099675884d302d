// Package etcdstore is a leasehold lock store on etcd v3, through the
// application's *clientv3.Client (go.etcd.io/etcd/client/v3).
//
// Each acquisition grants an etcd lease of its own, of the lock's ttl
// rounded up to whole seconds, and attaches the lock's key (a prefix, then
// the key exactly) to it in one transaction that requires the key to be
// absent. Renewal keeps that lease alive, release revokes it, and etcd
// deletes the key when the lease expires. The fencing token is the key's
// create revision, etcd's store-wide revision, which grows with every
// write across releases, expiries and leader changes.
//
// etcd frees an expired lease on its leader's periodic scan, whole seconds
// after it was last kept alive, so the store declares its expiry precision
// (see [Store.ExpiryPrecision] and core.ExpiryPrecisioner). The design, the
// behaviour on a leader change and after a snapshot restore, and a
// comparison with etcd's concurrency.Mutex are in docs/etcd.md.
package etcdstore
