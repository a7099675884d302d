package core_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold/core"
	"github.com/leasehold/leasehold/core/coretest"
)

// Each error message says what failed once per layer: "leasehold: " once,
// the operation and key once, then the layer below's own words.

// errDriver stands for a driver's error, which carries its own prefix.
var errDriver = errors.New("sqlstore: connection refused")

func TestErrorMessages(t *testing.T) {
	noop := func(context.Context) error { return nil }
	long := strings.Repeat("k", core.MaxKeyLength)
	for _, tc := range []struct {
		name string
		err  func(t *testing.T) error
		want string
		is   error
	}{{
		name: "acquire: store error",
		err: func(t *testing.T) error {
			l, spy := spyLocks(t)
			spy.acquireErr = errDriver
			_, err := l.Acquire(context.Background(), "k")
			return err
		},
		want: `leasehold: acquire "k": sqlstore: connection refused`,
		is:   errDriver,
	}, {
		name: "job lease: store error",
		err: func(t *testing.T) error {
			l, spy := spyLocks(t)
			spy.acquireErr = errDriver
			return mustJob(t, l, noop, core.WithJobKey("nm"), core.OnOneInstance()).Run(context.Background())
		},
		want: `leasehold: job "nm" lease: acquire "nm:owner": sqlstore: connection refused`,
		is:   errDriver,
	}, {
		name: "job run lock: store error",
		err: func(t *testing.T) error {
			l, spy := spyLocks(t)
			spy.acquireErr = errDriver
			return mustJob(t, l, noop, core.WithJobKey("nm"), core.WithoutOverlapping()).Run(context.Background())
		},
		want: `leasehold: job "nm" run lock: acquire "nm": sqlstore: connection refused`,
		is:   errDriver,
	}, {
		name: "job lease: broken store",
		err: func(t *testing.T) error {
			l, spy := spyLocks(t)
			spy.tokenFn = func(string, int64) int64 { return 0 }
			return mustJob(t, l, noop, core.WithJobKey("nm"), core.OnOneInstance()).Run(context.Background())
		},
		want: `leasehold: job "nm" lease: store broke the contract for key "nm:owner" (token 0): fencing tokens must be positive`,
		is:   core.ErrBrokenStore,
	}, {
		name: "JobKey empty",
		err: func(t *testing.T) error {
			l, _ := spyLocks(t)
			_, err := l.Job(namedJob, core.WithJobKey(""), core.OnOneInstance())
			return err
		},
		want: `leasehold: invalid key: WithJobKey("") is empty: give the job a key that stays the same across deploys`,
		is:   core.ErrInvalidKey,
	}, {
		name: "JobKey too long",
		err: func(t *testing.T) error {
			l, _ := spyLocks(t)
			_, err := l.Job(noop, core.WithJobKey(long), core.OnOneInstance())
			return err
		},
		want: `leasehold: invalid key: WithJobKey("` + long + `") is 500 characters, more than 494: the job's lease is the lock "<key>:owner", and a lock key is at most 500 characters`,
		is:   core.ErrInvalidKey,
	}, {
		name: "JobKey with NUL",
		err: func(t *testing.T) error {
			l, _ := spyLocks(t)
			_, err := l.Job(noop, core.WithJobKey("a\x00b"), core.WithoutOverlapping())
			return err
		},
		want: `leasehold: job: invalid key: "a\x00b" holds a NUL byte`,
		is:   core.ErrInvalidKey,
	}, {
		name: "JobTTL",
		err: func(t *testing.T) error {
			l, _ := spyLocks(t)
			_, err := l.Job(noop, core.WithJobKey("t"), core.OnOneInstance(), core.WithJobTTL(time.Microsecond))
			return err
		},
		want: `leasehold: job "t": invalid ttl: 1µs (want a whole number of milliseconds, at least 1ms)`,
		is:   core.ErrInvalidTTL,
	}, {
		name: "Campaign TTL",
		err: func(t *testing.T) error {
			l, _ := spyLocks(t)
			_, err := l.Elect("leader", core.Campaign{OnAcquired: func(*core.Lock) error { return nil }, TTL: time.Microsecond})
			return err
		},
		want: `leasehold: election "leader": invalid ttl: 1µs (want a whole number of milliseconds, at least 1ms)`,
		is:   core.ErrInvalidTTL,
	}, {
		name: "WithDefaultTTL",
		err: func(t *testing.T) error {
			_, err := core.New(core.NewMemoryStore(), core.WithDefaultTTL(0), core.WithLogger(discard))
			return err
		},
		want: `leasehold: WithDefaultTTL: invalid ttl: 0s (want a whole number of milliseconds, at least 1ms)`,
		is:   core.ErrInvalidTTL,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.err(t)
			if err == nil || err.Error() != tc.want {
				t.Fatalf("error:\n got %v\nwant %s", err, tc.want)
			}
			if !errors.Is(err, tc.is) {
				t.Fatalf("errors.Is(%v, %v) = false", err, tc.is)
			}
		})
	}
}

// spyLocks returns a Locks on a spy over a memory store, on a manual clock.
func spyLocks(t *testing.T) (*core.Locks, *spyStore) {
	t.Helper()
	clock := core.NewManualClock(t0)
	spy := newSpy(core.NewMemoryStore(core.WithMemoryClock(clock)), clock)
	return coretest.NewLocks(t, spy, core.WithClock(clock)), spy
}

func mustJob(t *testing.T, l *core.Locks, fn func(context.Context) error, opts ...core.JobOption) *core.Job {
	t.Helper()
	j, err := l.Job(fn, opts...)
	if err != nil {
		t.Fatalf("Job: %v", err)
	}
	return j
}
