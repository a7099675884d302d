// Package core is leasehold's heart: distributed locks that are leases,
// fencing tokens, job guards and leader election, on any [LockStore]. It
// has no dependencies outside the standard library; the stores for
// PostgreSQL, MySQL/MariaDB and SQLite are modules of their own
// (github.com/leasehold/leasehold/drivers/...), and [NewMemoryStore] serves
// one process and tests.
//
// A service needs [New], [Locks] and what it returns ([Lock], [Job],
// [Election]), their options and errors. Everything else in this package
// is for those who write a store or an adapter: the sections "For store
// authors" and "For adapter authors" at the end list it, as
// database/sql/driver does for database/sql.
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
// A job's runs fence with the run lock's token when the job has
// WithoutOverlapping, otherwise with the lease's ([Job.FencesWith]); that
// is the lock [LockFromContext] gives the run, and the token= of the job's
// log lines.
//
// # The ttl
//
// One default for the instance, one override where each lock is made:
//
//   - default: [WithDefaultTTL] on [New] ([DefaultTTL], 30s, without it);
//   - a lock: [WithTTL] on [Locks.Acquire] or [Locks.WithLock];
//   - a job (its lease and run lock): [WithJobTTL] on [Locks.Job];
//   - an election: [Campaign].TTL.
//
// An override left out, or zero for Campaign.TTL, takes the instance's
// default, so a service that sets [WithDefaultTTL] once sets every ttl.
// Every ttl is renewed every ttl/3 and is checked by [ValidateTTL].
//
// # One instance or several
//
// [MemoryStore] excludes callers in one process only. [New] logs a warning
// on it, and refuses it with [ErrMemoryStoreRefused] when the environment
// variable [EnvInstances] (LEASEHOLD_INSTANCES) says more than one instance
// runs, unless [AllowMemoryStore] is given.
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
// move the store's time separately. Package
// github.com/leasehold/leasehold/core/coretest has helpers for tests.
//
// # For store authors
//
// A store implements [LockStore] (three atomic calls, following the rules
// written on it and in docs/store-contract.md) and may implement the
// optional [Lister] (listing [LockInfo]), [BatchRenewer] (renewing many
// [Lease] values in one call), [Notifier] and [TryAcquirer] (waking a
// waiting Acquire when a key may be free, or when its holder's lease
// ends) and [ExpiryPrecisioner] (see [ExpiryLateness]). [ValidateKey] and [ValidateTTL] are the rules [Locks]
// checks before it calls a store, which may trust its arguments. A store
// that breaks the contract is reported with a [*StoreContractError]
// (matching [ErrBrokenStore]); [ErrTokensNotResettable] is for a store's
// ResetTokens test hook. The conformance kit
// (github.com/leasehold/leasehold/conformance) proves a store.
//
// # For adapter authors
//
// An adapter observes or drives [Locks] from outside: [Observer] (with
// [WithObserver]) sees each [Op] of an [OpType] and each lock by
// [LockKind]; [WithEventHandler] receives each [Event] of an [EventType];
// a [Clock] and its [Timer] (default [SystemClock]) set the time renewals
// run on. github.com/leasehold/leasehold/adapters holds the adapters of
// this repository (OpenTelemetry, robfig/cron, gocron).
package core
