package core

import (
	"fmt"
	"time"
)

// EventType names what happened in an [Event].
type EventType int

const (
	// EventLockLost: a holder can no longer be sure it holds a lock. Err is
	// the [*LockLostError]. Alert on it: another instance may be running the
	// same critical section.
	EventLockLost EventType = iota + 1
	// EventLeadershipAcquired: this instance became the leader of an election.
	EventLeadershipAcquired
	// EventLeadershipLost: this instance stopped leading: its lease was lost
	// (Err says how) or it stepped down (Err is nil or the callback's error).
	EventLeadershipLost
)

// String returns the event's name, such as "lock-lost".
func (t EventType) String() string {
	switch t {
	case EventLockLost:
		return "lock-lost"
	case EventLeadershipAcquired:
		return "leadership-acquired"
	case EventLeadershipLost:
		return "leadership-lost"
	}
	return fmt.Sprintf("EventType(%d)", int(t))
}

// Event is what a [Locks] instance reports to the handler given with
// [WithEventHandler].
type Event struct {
	Type  EventType
	Key   string
	Token int64
	Time  time.Time
	Err   error
}
