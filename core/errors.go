package core

import (
	"errors"
	"fmt"
	"strings"
)

var (
	// ErrNotAcquired reports that a key was held by someone else for the whole
	// attempt (once, or until the wait given with [WithWait] ended).
	ErrNotAcquired = errors.New("leasehold: lock not acquired: key is held")
	// ErrClosed reports a call on a [Locks] that has been closed.
	ErrClosed = errors.New("leasehold: locks closed")
	// ErrInvalidKey reports a key that is empty, too long, not UTF-8 or holds NUL.
	ErrInvalidKey = errors.New("leasehold: invalid key")
	// ErrInvalidTTL reports a ttl under 1ms or not a whole number of milliseconds.
	ErrInvalidTTL = errors.New("leasehold: invalid ttl")
	// ErrInvalidArgument reports another bad argument: a nil store, a nil
	// function, a negative wait.
	ErrInvalidArgument = errors.New("leasehold: invalid argument")
	// ErrReleased is the cause of a lock's context after the holder released it.
	ErrReleased = errors.New("leasehold: lock released")
	// ErrBrokenStore is matched by every [*StoreContractError].
	ErrBrokenStore = errors.New("leasehold: store broke the LockStore contract")
	// ErrSkipped is matched by every [*SkippedError]: a job tick that did not run.
	ErrSkipped = errors.New("leasehold: job run skipped")
	// ErrDuplicateKey reports a job or election whose key collides with one
	// already registered on the same [Locks] instance.
	ErrDuplicateKey = errors.New("leasehold: key already registered")
	// ErrMemoryStoreRefused reports that [New] refused a [MemoryStore]
	// because the environment says the service runs as several instances
	// ([EnvInstances] above 1): each would have its own store and take
	// every lock. See [AllowMemoryStore].
	ErrMemoryStoreRefused = errors.New("leasehold: memory store refused: the service runs as several instances")
)

// LossReason says how a holder found out that it could no longer be sure it
// held its lock.
type LossReason int

const (
	// LostRefused: the store answered that the owner no longer holds the key
	// (it expired in the store, or someone else holds it now).
	LostRefused LossReason = iota + 1
	// LostDeadline: ttl minus [SafetyMargin] passed since the last renewal
	// the store confirmed was sent, while renewals failed or went
	// unanswered. The holder gives up before the store can expire the lock.
	LostDeadline
)

// String describes the reason in words, for logs and error messages.
func (r LossReason) String() string {
	switch r {
	case LostRefused:
		return "refused by the store"
	case LostDeadline:
		return "ttl passed without a confirmed renewal"
	}
	return fmt.Sprintf("LossReason(%d)", int(r))
}

// LockLostError is the cause of a lock's context (see [context.Cause]) when
// the holder can no longer be sure it holds the lock. Another instance may be
// running the same critical section from this moment on.
//
// With Reason [LostDeadline] the context is cancelled [SafetyMargin] (ttl/20,
// at least 250ms) before the store can expire the lock, so that a holder whose
// timers fire late under CPU load still stops before another instance can be
// granted the key. A holder that is frozen (a stopped VM, a long pause)
// cannot be stopped in time: fence its writes with the lock's token.
type LockLostError struct {
	Key    string
	Token  int64
	Reason LossReason
	// Err is the last store error seen while renewing, if any.
	Err error
}

// Error says which lock was lost, with which token, and how.
func (e *LockLostError) Error() string {
	msg := fmt.Sprintf("leasehold: lock %q (token %d) lost: %s", e.Key, e.Token, e.Reason)
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Unwrap returns the last store error seen while renewing, if any.
func (e *LockLostError) Unwrap() error { return e.Err }

// StoreContractError reports an answer from a [LockStore] that breaks the
// contract, such as a fencing token that did not grow. The acquisition that
// received it fails: fencing with such a token would not protect anything.
type StoreContractError struct {
	Key   string
	Token int64
	// Rule names the broken rule.
	Rule string
}

// Error names the key, the token and the broken rule.
func (e *StoreContractError) Error() string {
	return fmt.Sprintf("leasehold: store broke the contract for key %q (token %d): %s", e.Key, e.Token, e.Rule)
}

// Is makes every StoreContractError match [ErrBrokenStore].
func (e *StoreContractError) Is(target error) bool { return target == ErrBrokenStore }

// layerError is an error of one layer of leasehold around an error of the
// layer below. It reads "leasehold: <what>: <inner>" with the inner error's
// own "leasehold: " left out, so that nested layers name the library once:
// `leasehold: job "x" lease: acquire "x:owner": …`, not
// `leasehold: job "x" lease: leasehold: acquire …`.
type layerError struct {
	what string
	err  error
}

func (e *layerError) Error() string {
	return "leasehold: " + e.what + ": " + strings.TrimPrefix(e.err.Error(), "leasehold: ")
}

func (e *layerError) Unwrap() error { return e.err }

// layer wraps err in a layerError that says what failed.
func layer(err error, format string, args ...any) error {
	return &layerError{what: fmt.Sprintf(format, args...), err: err}
}
