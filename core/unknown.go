package core

import (
	"time"
)

// unknownOutcomeTimeout bounds the first release Acquire sends after a
// store call that failed: short, since the caller waits for it, and the
// store is likely in trouble.
const unknownOutcomeTimeout = 2 * time.Second

// unknownRetryDelay spaces the releases that go on in the background after
// the first one failed: the key is free this soon after the store answers
// again (plus a round trip).
const unknownRetryDelay = 50 * time.Millisecond

// releaseUnknown releases key for owner after an acquisition of ttl, sent
// at sent, whose outcome is unknown: the store may have taken the key. It
// tries once within unknownOutcomeTimeout, while the caller waits; if that
// fails, it goes on in the background, every unknownRetryDelay, while the
// lease the acquisition may have taken could still be live (until ttl
// after sent, on the instance's clock, which never runs ahead of the
// store's lease), or until the instance is closed. No Lock holds the key,
// so the keeper never sees it.
//
// acquireErr is the acquisition's error: when the release fails the same
// way, and neither timed out, the store ran neither (a missing table, a
// refused connection), nothing was taken, and there is nothing to retry
// or warn about.
func (l *Locks) releaseUnknown(key, owner string, kind LockKind, sent time.Time, ttl time.Duration, acquireErr error) {
	released, err := l.releaseOnce(key, owner, kind, unknownOutcomeTimeout)
	switch {
	case err == nil:
		if released {
			l.log.Debug("leasehold: released a lock this process must not keep", "key", key)
		}
		return
	case sameRefusal(acquireErr, err):
		l.log.Debug("leasehold: the store refused an acquire and its release alike; nothing was taken", "key", key, "err", err)
		return
	}
	end := sent.Add(ttl)
	if !l.clock.Now().Before(end) {
		l.log.Warn("leasehold: could not release what a failed acquire may have taken; the key may stay held until its ttl", "key", key, "err", err, "acquire_err", acquireErr)
		return
	}
	l.log.Warn("leasehold: could not release what a failed acquire may have taken; trying again until its ttl ends", "key", key, "until", end, "err", err, "acquire_err", acquireErr)
	go l.keepReleasing(key, owner, kind, end)
}

// keepReleasing is releaseUnknown's background part: it tries again until
// a release is answered, end passes, or the instance is closed.
func (l *Locks) keepReleasing(key, owner string, kind LockKind, end time.Time) {
	for {
		if sleep(l.base, l.clock, unknownRetryDelay) != nil {
			return // closed
		}
		left := end.Sub(l.clock.Now())
		if left <= 0 {
			l.log.Warn("leasehold: gave up releasing a lock this process must not keep: its ttl has ended", "key", key)
			return
		}
		// A try stays in flight as long as it can help (at most
		// unknownOutcomeTimeout), so that a store that was stalled answers
		// it as soon as it resumes.
		released, err := l.releaseOnce(key, owner, kind, min(left, unknownOutcomeTimeout))
		if err == nil {
			if released {
				l.log.Debug("leasehold: released a lock this process must not keep", "key", key)
			}
			return
		}
	}
}
