package core

import "time"

// The safety margin: a holder gives up its lock this long before the store
// can expire it. See [SafetyMargin].
const (
	marginFraction = 20                     // ttl/20, 5% of the ttl
	marginFloor    = 250 * time.Millisecond // at least this, for short ttls
)

// SafetyMargin returns how long before the store can expire a lock of this
// ttl its holder gives it up: ttl/20, at least 250ms, and at most ttl/3 (so
// that the renewal sent every ttl/3 still has a chance).
//
// The store counts a lock's ttl from the moment it runs the statement; the
// holder counts from the moment before it sent it, which is earlier, so on
// paper a deadline of exactly ttl is safe. In practice the holder's deadline
// is kept by a timer, and timers fire late: on a loaded host (every core
// busy, the race detector on, other processes competing) the leasehold
// tests measured losses up to about 170ms after the deadline; a container
// throttled by its CPU quota stops for up to a quota period (100ms by
// default). A store's clock may also run a little faster than the holder's
// or round the ttl. Without a margin the holder's context could
// still be live for a moment after the store freed the key and another
// instance took it. The fraction covers clock rate differences, which grow
// with the ttl; the floor covers late timers, which do not.
//
// With renewals failing, a lock's context is therefore cancelled ttl -
// SafetyMargin(ttl) after the last renewal the store confirmed was sent,
// and a renewal must come back within 2/3 × ttl - SafetyMargin(ttl) of
// being sent to keep the lock.
func SafetyMargin(ttl time.Duration) time.Duration {
	return min(max(ttl/marginFraction, marginFloor), ttl/3)
}

// holderDeadline is when a holder stops trusting a lock whose last
// confirmed acquisition or renewal was sent at sent.
func holderDeadline(sent time.Time, ttl time.Duration) time.Time {
	return sent.Add(ttl - SafetyMargin(ttl))
}
