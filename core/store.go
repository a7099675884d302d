package core

import (
	"context"
	"time"
)

// LockStore keeps locks where every instance of a service can see them: a
// table in the application's database, a Redis server, or memory for tests.
// Drivers and third parties implement it; [Locks] builds leases, jobs and
// elections on top of it. The conformance kit
// (github.com/leasehold/leasehold/conformance) proves an implementation.
//
// Every implementation must follow these rules. Each one closes a race that
// would let two holders into the same critical section.
//
//   - Atomic methods. "No live lock holds key" (Acquire) and "owner still holds
//     key" (Renew, Release) are checked in the same statement, script or
//     serialised transaction that writes. A read followed by a separate write
//     lets two acquirers both see the key free and both win; of any number of
//     concurrent acquirers exactly one must win.
//   - The store's clock. Expiry is measured on the store's own clock, so
//     instances whose clocks disagree still agree on when a lock expires. ttl is
//     a whole number of milliseconds and may be weeks long: it must not be
//     squeezed into 32 bits (2^31 ms is under 25 days).
//   - Expired means gone. A lock whose expiry has passed does not exist, for
//     every method, whether or not its record was deleted. Otherwise a holder
//     that paused past its ttl could renew or release a lock that another
//     owner has since taken.
//   - Growing tokens. Acquire returns a positive fencing token, greater than
//     every token the key had before, across releases and expiries. A
//     resource that keeps the highest token it has seen can then refuse the
//     late write of a holder that paused past its lease. A store whose token
//     source can go back (a restore from backup, a failover to a lagging
//     replica) keeps a per-key floor: the next token of a key is at least its
//     last token + 1.
//   - Release keeps the floor. Release must keep enough state (for example the
//     row with its owner cleared) that the next Acquire cannot draw a smaller
//     token than the released one.
//   - Exact keys. Keys are strings of up to [MaxKeyLength] characters, any
//     Unicode, compared byte for byte: no case folding, no trailing-space
//     padding, no normalisation. Two keys that a store folds together are one
//     lock held by two unrelated jobs. Owner ids are kept exactly too; they
//     are valid UTF-8 of at most 227 bytes (see [WithInstanceName]).
//   - Errors are errors. A failed call (cancelled context, lost connection)
//     returns an error, never a false answer: false means the store decided.
//
// [Locks] validates keys and ttls before they reach a store, and refuses an
// acquisition whose token breaks the growing-token rule. A store therefore
// trusts its arguments and does not check keys or ttls again (the
// conformance kit, which calls stores directly, passes valid ones only).
type LockStore interface {
	// Acquire takes key for owner if no live lock holds it, and returns the
	// acquisition's fencing token; acquired is false when the key is taken.
	Acquire(ctx context.Context, key, owner string, ttl time.Duration) (token int64, acquired bool, err error)
	// Renew moves the expiry to ttl from now, if owner still holds a live lock on key.
	Renew(ctx context.Context, key, owner string, ttl time.Duration) (renewed bool, err error)
	// Release gives the lock back, if owner still holds a live lock on key.
	Release(ctx context.Context, key, owner string) (released bool, err error)
}

// LockInfo describes one live lock, as a [Lister] reports it.
type LockInfo struct {
	Key   string
	Owner string
	Token int64
	// ExpiresIn is the time left before the lock expires, on the store's clock.
	ExpiresIn time.Duration
}

// Lister is implemented by stores that can list their live locks, for
// tooling such as the leasehold status command. It is optional: [Locks]
// never needs it.
type Lister interface {
	// List returns the live locks whose key starts with prefix, ordered by key.
	List(ctx context.Context, prefix string) ([]LockInfo, error)
}

// Validator is implemented by stores that can tell whether they can work:
// a store's zero value, or one made without its constructor, typically
// has no connection to use. [New] refuses a store whose Valid returns an
// error, with an error matching [ErrInvalidArgument], so that such a store
// fails at start-up instead of panicking at its first call. Valid must not
// touch the store's server, and must not panic on the zero value (nor on
// a nil pointer receiver).
type Validator interface {
	// Valid returns nil if the store can be used, else why not.
	Valid() error
}
