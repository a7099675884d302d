package core

import "time"

// Clock is the time source of a [Locks] instance: renewals, deadlines and
// waits are scheduled on it. The default is the system clock; tests use
// [ManualClock] to move through minutes of renewals deterministically.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// AfterFunc calls f, in its own goroutine or synchronously from the
	// clock's owner, once d has elapsed.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a pending call scheduled with [Clock.AfterFunc]. A Timer that
// also has a method Reset(d time.Duration) bool, which schedules the call
// again d from now whether or not it ran (as *time.Timer's and
// [ManualClock]'s do), is reused by [Locks] instead of a new AfterFunc each
// time its next renewal moves.
type Timer interface {
	// Stop prevents the call if it has not started, reporting whether it did.
	Stop() bool
}

// SystemClock returns the clock of the machine, backed by package time.
func SystemClock() Clock { return systemClock{} }

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

func (systemClock) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }
