package core

import (
	"errors"
	"time"
)

// ExpiryPrecisioner is an optional capability of a [LockStore]: a store
// whose expiry is coarse declares how late it may free a lock. Most stores
// do not need it: a SQL row or a Redis key expires within a millisecond of
// its ttl. A store built on server-managed leases (etcd's, in whole seconds,
// expired by the leader's periodic scan) frees a lock at some moment between
// ttl and ttl + ExpiryPrecision() after the call that set it.
//
// The declaration only ever makes a store look later, never earlier: a store
// must never free a lock before ttl after it ran the call, whatever it
// declares (see [SafetyMargin]). [Locks] does not change its own deadlines
// for it (the holder still gives up before ttl); tools and tests that check
// that a lock is free "by now" wait [ExpiryLateness] longer.
type ExpiryPrecisioner interface {
	// ExpiryPrecision returns how long after its ttl the store may still
	// hold an expired lock, for a lock of the given ttl. It is at least 0.
	ExpiryPrecision(ttl time.Duration) time.Duration
}

// ExpiryLateness returns how long after ttl a lock of store may still be
// held once nobody renews it: the store's [ExpiryPrecisioner] declaration,
// or 0 for a store without one. A negative declaration counts as 0.
func ExpiryLateness(store LockStore, ttl time.Duration) time.Duration {
	p, ok := store.(ExpiryPrecisioner)
	if !ok {
		return 0
	}
	return max(p.ExpiryPrecision(ttl), 0)
}

// ErrTokensNotResettable is returned by a store's ResetTokens method (the
// conformance kit's TokenResetter) when its token source cannot be sent
// back on its own: etcd's revision, which is the whole keyspace's history,
// goes back only with a restore of the whole store. Such a store's tokens
// grow for as long as the source does not go back; docs/store-contract.md
// says what its operator must do instead (etcd: restore with the revision
// bumped).
var ErrTokensNotResettable = errors.New("leasehold: the store's token source cannot be reset on its own")
