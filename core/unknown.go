package core

import (
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

// unknownRechecks is how many more releases follow one the store answered
// with "not held", spaced 100ms, 200ms, 400ms, 800ms: the acquisition may
// still be on its way, on another connection than the release's (a stalled
// network that resumed, a connection reset after the request left), and
// land after the release that overtook it.
const unknownRechecks = 4

// releaseUnknown releases key for owner after an acquisition of ttl, sent
// at sent, whose outcome is unknown: the store may have taken the key, or
// may still take it. It tries once within unknownOutcomeTimeout, while
// the caller waits. Then, in the background: if that release failed, it
// tries again every unknownRetryDelay until the store answers, for the
// longer of the ttl and unknownRetryWindow; once the store has answered
// "not held", it checks unknownRechecks more times. It stops at the first
// release that finds the lock, or when the instance is closed. No Lock
// holds the key, so the keeper never sees it.
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
	go l.keepReleasing(key, owner, kind, err == nil, sent.Add(max(ttl, unknownRetryWindow)))
}

// keepReleasing is releaseUnknown's background part. answered says whether
// the store has answered a release ("not held") yet; giveUp ends the
// releases while it has not.
func (l *Locks) keepReleasing(key, owner string, kind LockKind, answered bool, giveUp time.Time) {
	delay := unknownRetryDelay
	rechecks := 0
	for {
		if answered {
			if rechecks == unknownRechecks {
				return
			}
			rechecks++
			delay *= 2
		}
		if sleep(l.base, l.clock, delay) != nil {
			return // closed
		}
		timeout := unknownOutcomeTimeout
		if !answered {
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
		answered = answered || err == nil
	}
}
