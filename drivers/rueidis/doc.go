// Package rueidisstore keeps leasehold's locks in Redis (7.0 or newer) or
// Valkey (7.2 or newer), standalone, behind Sentinel or as a Cluster,
// through a github.com/redis/rueidis client the application already has.
//
// Import it as
//
//	import rueidisstore "github.com/leasehold/leasehold/drivers/rueidis"
//
// The package is named rueidisstore, not rueidis, so that it never clashes
// with github.com/redis/rueidis, which the same file usually imports.
//
// A [Store] is a [core.LockStore] and a [core.Lister]. Each operation is one
// Lua script (EVALSHA, falling back to EVAL), which Redis runs atomically:
// the owner check and the write are one step. Expiry is Redis's own
// (PEXPIRE, in milliseconds, on the server's clock), so a lock that expired
// does not exist for any operation.
//
// A lock key k becomes two Redis keys, prefix{k} (a hash: owner and token,
// expiring with the lock) and prefix{k}:floor (the key's last token, kept
// for a retention after the lock ends), with '%', '{' and '}' in k escaped
// as %25, %7B and %7D. The braces are a Cluster hash tag: both keys of a
// lock live in one slot, different locks spread over the slots, and no two
// lock keys share a Redis key.
//
// Fencing tokens are the greater of the key's floor + 1 and the server's
// clock in microseconds (TIME, inside the script). They grow with every
// acquisition of a key, across releases and expiries, and across a lost
// floor (a restart without persistence, FLUSHALL, a failover to a replica
// that missed the last writes) as long as the server's clock has not gone
// back by more than the time since the key's last acquisition; the floor
// covers a clock that went back while it is kept. docs/redis.md says
// exactly what is and is not guaranteed.
package rueidisstore
