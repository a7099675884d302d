package core

import (
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// DefaultTTL is the ttl of locks when neither [WithDefaultTTL] nor [WithTTL]
// says otherwise.
const DefaultTTL = 30 * time.Second

// Option configures a [Locks] instance in [New].
type Option func(*config)

type config struct {
	ttl      time.Duration
	clock    Clock
	logger   *slog.Logger
	onEvent  func(Event)
	instance string
	observer Observer // one, or observers
	// memoryAllowed skips the memory store's guard (see AllowMemoryStore).
	memoryAllowed bool
}

// WithDefaultTTL sets the ttl of locks taken without [WithTTL] (default
// [DefaultTTL]). Pick it well above the store's round trip and the longest
// pause you accept, and short enough that a crashed holder does not block
// others for long.
func WithDefaultTTL(ttl time.Duration) Option { return func(c *config) { c.ttl = ttl } }

// WithClock sets the clock that renewals, deadlines and waits run on
// (default: the system clock). Tests pass a [ManualClock].
func WithClock(clock Clock) Option { return func(c *config) { c.clock = clock } }

// WithLogger sets the logger (default [slog.Default]). Lost locks are logged
// at warn, acquisitions, releases and skipped job ticks at debug.
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.logger = l } }

// WithEventHandler sets a function that receives every [Event]. It is called
// synchronously from the goroutine that noticed the event (often the
// lease keeper), so it must return quickly; a panic in it is recovered
// and logged. It may call [Locks.Close] (to stop a process that lost a lock,
// say): Close then does not wait for the renewal that is running the handler.
func WithEventHandler(fn func(Event)) Option { return func(c *config) { c.onEvent = fn } }

// WithInstanceName sets a name for this instance (default: host name and
// process id), used as the readable part of owner ids so that an operator
// listing the locks can tell which instance holds each. Owner ids go into
// text columns, so [New] keeps at most 200 bytes of the name (cut at a
// character boundary) and replaces invalid UTF-8 and NUL with "?", with a
// warning in the log when it changes the name.
func WithInstanceName(name string) Option { return func(c *config) { c.instance = name } }

// AcquireOption configures one call of [Locks.Acquire] or [Locks.WithLock].
type AcquireOption func(*acquireConfig)

type acquireConfig struct {
	ttl  time.Duration
	wait time.Duration
	kind LockKind // set by jobs and elections; KindLock otherwise
}

// with returns c with opts applied. An option is a function the compiler
// cannot see into, so the config it is handed escapes to the heap: it is
// one of a pool's, so that options cost no allocation per Acquire.
// A nil option is an error matching [ErrInvalidArgument].
func (c acquireConfig) with(opts []AcquireOption) (acquireConfig, error) {
	for i, o := range opts {
		if o == nil {
			return c, fmt.Errorf("%w: acquire option %d is nil", ErrInvalidArgument, i)
		}
	}
	p := configPool.Get().(*acquireConfig)
	*p = c
	for _, o := range opts {
		o(p)
	}
	c = *p
	configPool.Put(p)
	return c, nil
}

var configPool = sync.Pool{New: func() any { return new(acquireConfig) }}

// WithTTL sets the ttl of this lock, instead of the instance's default.
func WithTTL(ttl time.Duration) AcquireOption { return func(c *acquireConfig) { c.ttl = ttl } }

// WithWait keeps trying to take a held key, with jittered backoff, for up to
// d (default 0: try once). The context given to Acquire also ends the wait.
func WithWait(d time.Duration) AcquireOption { return func(c *acquireConfig) { c.wait = d } }
