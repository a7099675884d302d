package core

import (
	"context"
	"errors"
	"fmt"
)

// Observer watches the work of a [Locks] instance, for metrics and traces.
// An adapter (such as github.com/leasehold/leasehold/adapters/otel)
// implements it and [WithObserver] installs it; core itself needs nothing
// but this interface.
//
// Start is called as each operation begins, and its end function as it
// ends, on the goroutines that do the work (often the lease keeper, see keeper.go).
// The context Start returns is the one the
// operation runs in: a store call receives it, and the context of a
// WithLock callback or a job run derives from it, so a tracer puts its span
// there. end is called exactly once, with:
//
//   - [OpAcquire], [OpRenew], [OpRelease]: the store's answer (acquired,
//     renewed, released) and its error.
//   - [OpHold]: ok when the holder released the lock and the store confirmed
//     it; otherwise err says why it ended: the [*LockLostError] of a lost
//     lock (also when a release found it gone), the error of a release that
//     failed, or why leasehold refused the store's grant at once (a
//     [*StoreContractError], [ErrClosed]).
//   - [OpWithLock], [OpJobRun]: whether the function ran (the lock was
//     taken, the job's function was called), and the error [Locks.WithLock]
//     or [Job.Run] returns, a [*SkippedError] for a skipped tick. If the
//     function panics, end hears an error saying so before the panic goes on.
//
// Start and end must return quickly and must not call the [Locks] instance.
type Observer interface {
	Start(ctx context.Context, op Op) (context.Context, func(ok bool, err error))
}

// WithObserver adds an [Observer] to the instance. Several may be added:
// each sees every operation, in the order given, and each one's context
// is passed to the next. A nil Observer adds nothing.
func WithObserver(o Observer) Option {
	return func(c *config) {
		if o == nil {
			return
		}
		switch prev := c.observer.(type) {
		case nil:
			c.observer = o
		case observers:
			c.observer = append(prev[:len(prev):len(prev)], o)
		default:
			c.observer = observers{prev, o}
		}
	}
}

// Op is an operation an [Observer] sees.
type Op struct {
	Type OpType
	// Key is the lock's key; for [OpJobRun], the job's key.
	Key string
	// Kind is what the lock is for; zero for [OpJobRun], which may take a
	// job lease and a run lock.
	Kind LockKind
}

// OpType names an operation in an [Op].
type OpType int

const (
	// OpAcquire is one Acquire call to the store: one attempt.
	OpAcquire OpType = iota + 1
	// OpRenew is one Renew call to the store, or one lease of a
	// RenewBatch call (see [BatchRenewer]): each lease of a batch is an
	// OpRenew of its own, and all of them end with the call.
	OpRenew
	// OpRelease is one Release call to the store.
	OpRelease
	// OpHold lasts while this process holds a lock: from the store's grant
	// to its release or loss.
	OpHold
	// OpWithLock is a [Locks.WithLock] call, from the first attempt to the
	// release.
	OpWithLock
	// OpJobRun is one tick of a job ([Job.Run]), skipped or run.
	OpJobRun
)

// String returns the operation's name, such as "acquire" or "job-run".
func (t OpType) String() string {
	switch t {
	case OpAcquire:
		return "acquire"
	case OpRenew:
		return "renew"
	case OpRelease:
		return "release"
	case OpHold:
		return "hold"
	case OpWithLock:
		return "with-lock"
	case OpJobRun:
		return "job-run"
	}
	return fmt.Sprintf("OpType(%d)", int(t))
}

// LockKind says what a lock is for.
type LockKind int

const (
	// KindLock is a lock taken with [Locks.Acquire] or [Locks.WithLock].
	KindLock LockKind = iota + 1
	// KindJobLease is a job's lease, the lock "<key>:owner" of [OnOneInstance].
	KindJobLease
	// KindRunLock is a job's run lock, the lock "<key>" of [WithoutOverlapping].
	KindRunLock
	// KindLeadership is an election's lease.
	KindLeadership
)

// String returns the kind's name, such as "job-lease".
func (k LockKind) String() string {
	switch k {
	case KindLock:
		return "lock"
	case KindJobLease:
		return "job-lease"
	case KindRunLock:
		return "run-lock"
	case KindLeadership:
		return "leadership"
	}
	return fmt.Sprintf("LockKind(%d)", int(k))
}

// errPanicked is what an Observer hears when a WithLock callback or a job
// panics; the panic itself goes on.
var errPanicked = errors.New("leasehold: the function panicked")

// observe starts op with the instance's observer, if any. The caller must
// call end once.
func (l *Locks) observe(ctx context.Context, op Op) (_ context.Context, end func(ok bool, err error)) {
	if l.observer == nil {
		return ctx, endNothing
	}
	return l.observer.Start(ctx, op)
}

func endNothing(bool, error) {}

// observed runs work as op and ends op with its outcome: ran, as work sets
// it, and its error, or errPanicked if work panics.
func (l *Locks) observed(ctx context.Context, op Op, work func(ctx context.Context, ran *bool) error) error {
	ctx, end := l.observe(ctx, op)
	ran, panicked := false, true
	defer func() {
		if panicked {
			end(ran, errPanicked)
		}
	}()
	err := work(ctx, &ran)
	panicked = false
	end(ran, err)
	return err
}

// observers is several Observers as one: contexts nest in order, ends run
// in reverse.
type observers []Observer

func (os observers) Start(ctx context.Context, op Op) (context.Context, func(bool, error)) {
	ends := make([]func(bool, error), len(os))
	for i, o := range os {
		ctx, ends[i] = o.Start(ctx, op)
	}
	return ctx, func(ok bool, err error) {
		for i := len(ends) - 1; i >= 0; i-- {
			ends[i](ok, err)
		}
	}
}

// asKind marks the lock a job or an election takes.
func asKind(k LockKind) AcquireOption { return func(c *acquireConfig) { c.kind = k } }
