// Package core is leasehold's heart: distributed locks that are leases,
// fencing tokens, job guards and leader election, on any [LockStore]. It
// has no dependencies outside the standard library; the stores for
// PostgreSQL, MySQL/MariaDB and SQLite are modules of their own
// (github.com/leasehold/leasehold/drivers/...), and [NewMemoryStore] serves
// one process and tests.
//
// # Locks are leases
//
// [Locks.Acquire] takes a key for a ttl (default 30s) and returns a [*Lock].
// While it is held, the [Locks] instance renews it every ttl/3. The holder's
// own deadline is ttl minus a safety margin ([SafetyMargin]: ttl/20, at least
// 250ms) after it sent the last renewal the store confirmed, so it gives up
// before the store expires the lock, even when its timers fire late. The lock's
// [Lock.Context] is cancelled the moment the holder can no longer be sure it
// holds it: when the store refuses a renewal, or when the deadline passes
// while renewals fail. [context.Cause] then returns a [*LockLostError], a
// warning is logged and an [EventLockLost] is sent. Pass that context to
// everything the lock protects.
//
// Decisions worth knowing:
//   - A lock lives inside the context given to Acquire: when that context
//     ends, the lock's context ends too and the lock is released.
//   - [Lock.Release] hands the lock back even when its context is already
//     done (within a bounded time), so a deferred Release always frees the key.
//   - A ttl must be a whole number of milliseconds, at least 1ms: anything
//     else is refused with [ErrInvalidTTL], not rounded.
//   - Keys are 1 to [MaxKeyLength] characters of valid UTF-8 without NUL,
//     compared exactly by every store.
//   - Owner ids are the instance name and 130 random bits, new for every
//     acquisition.
//
// # Fencing tokens
//
// Every acquisition of a key gets a token greater than any the key had
// before ([Lock.Token]). A resource that keeps the highest token it has seen
// and refuses lower ones cannot be overwritten by a holder that paused past
// its lease. [LockFromContext] finds the lock, and so the token, inside
// [Locks.WithLock], a job run or a leadership.
//
// # Jobs and elections
//
// [Locks.Job] puts a scheduled function under two guards, alone or together:
// [OnOneInstance] (a sticky lease, handed over when its owner dies or shuts
// down) and [WithoutOverlapping] (a run lock held for the whole run).
// [Locks.Elect] holds a leadership for as long as the leader lives.
// [Locks.Close] shuts all of it down in order: no new ticks, running runs
// finish, job leases go back, leaders step down, other locks are released.
//
// # Observing
//
// [WithObserver] installs an [Observer], which sees every store call with
// its answer, every lock held until its release or loss, every
// [Locks.WithLock] and every job tick, and may put a span in the context
// each runs in. github.com/leasehold/leasehold/adapters/otel implements it
// for OpenTelemetry metrics and traces.
//
// # Testing
//
// A [ManualClock] moves an instance through minutes of renewals, expiries and
// handovers deterministically; an instance whose manual clock is not advanced
// behaves as a paused process. Give [NewMemoryStore] its own manual clock to
// move the store's time separately.
package core
