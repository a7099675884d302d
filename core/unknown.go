package core

import (
	"context"
	"errors"
	"io"
	"net"
	"syscall"
	"time"

	"github.com/leasehold/leasehold/core/connhint"
)

// unknownOutcomeTimeout bounds the first release Acquire sends after a
// store call that failed: short, since the caller waits for it, and the
// store is likely in trouble.
const unknownOutcomeTimeout = 2 * time.Second

// unknownRetryDelay spaces the releases that go on in the background after
// the first one failed: the key is free this soon after the store answers
// again (plus a round trip).
const unknownRetryDelay = 50 * time.Millisecond

// unknownRetryWindow is how long, at least, releases go on while the store
// does not answer. The lease an acquisition may have taken lasts its ttl
// from when the store ran it, and a stalled store runs a request it holds
// when it resumes, however late: counting the ttl from the send would stop
// the releases just when they can help.
const unknownRetryWindow = time.Minute

// After the store has answered a release "not held", releases go on for
// unknownRecheckWindow, spaced a quarter (unknownRecheckFraction) of the
// time since that answer, and at least unknownRecheckMin apart: the
// acquisition may still be on its way, on another connection than the
// release's (a stalled network that resumed, a connection reset after the
// request left), and land after the release that overtook it. One that
// lands d after the answer is undone within max(unknownRecheckMin, d/4),
// plus a round trip: early, while most such acquisitions land, the checks
// are close together; later, when few still can, they thin out, about
// eighteen checks in all.
const (
	unknownRecheckWindow   = 1500 * time.Millisecond
	unknownRecheckMin      = 20 * time.Millisecond
	unknownRecheckFraction = 4
)

// releaseUnknown releases key for owner after an acquisition of ttl, sent
// at sent, whose outcome is unknown: the store may have taken the key, or
// may still take it. It tries once within unknownOutcomeTimeout, while
// the caller waits. Then, in the background: if that release failed, it
// tries again every unknownRetryDelay until the store answers, for the
// longer of the ttl and unknownRetryWindow; once the store has answered
// "not held", it checks again for unknownRecheckWindow, more often at
// first. It stops at the first release that finds the lock, or when the
// instance is closed. No Lock holds the key, so the keeper never sees it.
//
// acquireErr is the acquisition's error: when the release fails the same
// way, and neither timed out, the store ran neither (a missing table, a
// refused connection), nothing was taken, and there is nothing to retry
// or warn about.
func (l *Locks) releaseUnknown(key, owner string, kind LockKind, sent time.Time, ttl time.Duration, acquireErr error) {
	released, err := l.releaseOnce(key, owner, kind, unknownOutcomeTimeout)
	switch {
	case released:
		l.log.Debug("leasehold: released a lock this process must not keep", "key", key)
		return
	case err != nil && sameRefusal(acquireErr, err):
		l.log.Debug("leasehold: the store refused an acquire and its release alike; nothing was taken", "key", key, "err", err)
		return
	case err != nil:
		l.log.Warn("leasehold: could not release what a failed acquire may have taken; trying again until the store answers", "key", key, "err", connhint.Wrap(err), "acquire_err", acquireErr)
	}
	var answered time.Time
	if err == nil {
		answered = l.clock.Now()
	}
	go l.keepReleasing(key, owner, kind, answered, sent.Add(max(ttl, unknownRetryWindow)), true)
}

// keepReleasing is releaseUnknown's background part, and that of a
// Release the store failed. answered is when the store first answered a
// release ("not held"), zero while it has not; giveUp ends the releases
// while it has not. recheck says whether an answer may be overtaken by an
// acquisition still on its way: it may after an unknown acquisition, not
// after a failed Release (a renewal cannot take a key back).
func (l *Locks) keepReleasing(key, owner string, kind LockKind, answered, giveUp time.Time, recheck bool) {
	for {
		delay := unknownRetryDelay
		if !answered.IsZero() {
			if !recheck {
				return
			}
			since := l.clock.Now().Sub(answered)
			if since >= unknownRecheckWindow {
				return
			}
			delay = max(unknownRecheckMin, since/unknownRecheckFraction)
		}
		if sleep(l.base, l.clock, delay) != nil {
			return // closed
		}
		timeout := unknownOutcomeTimeout
		if answered.IsZero() {
			left := giveUp.Sub(l.clock.Now())
			if left <= 0 {
				l.log.Warn("leasehold: gave up releasing a lock this process must not keep: the store has not answered; the key may stay held until its ttl", "key", key)
				return
			}
			// A try stays in flight as long as it can help, so that a
			// store that was stalled answers it as soon as it resumes.
			timeout = min(left, timeout)
		}
		released, err := l.releaseOnce(key, owner, kind, timeout)
		if released {
			l.log.Debug("leasehold: released a lock this process must not keep", "key", key)
			return
		}
		if err == nil && answered.IsZero() {
			answered = l.clock.Now()
		}
	}
}

// sameRefusal reports whether two store errors say the same thing and
// neither is one after which the store may have done the work: a timeout,
// or a connection that broke mid-call (a reset storm fails an acquire and
// its release alike, after the acquire may have run).
func sameRefusal(a, b error) bool {
	return !mayHaveRun(a) && !mayHaveRun(b) && a.Error() == b.Error()
}

// mayHaveRun reports whether err may have come after the store ran the
// call: a timeout, a cancellation, or a connection that broke after the
// request could have left (reset, closed mid-reply, any network error but
// a failed dial, which sent nothing).
func mayHaveRun(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNABORTED) {
		return true
	}
	var op *net.OpError
	if errors.As(err, &op) {
		return op.Op != "dial"
	}
	var ne net.Error
	return errors.As(err, &ne)
}
