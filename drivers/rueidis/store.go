package rueidisstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/redis/rueidis"

	"github.com/leasehold/leasehold/core"
)

// Store is a [core.LockStore] and [core.Lister] on Redis or Valkey, through
// a rueidis client. Its methods are safe for concurrent use, and any number
// of Stores (in one process or many) may share a server and a prefix.
type Store struct {
	client    rueidis.Client
	prefix    string
	retention time.Duration // how long a floor key outlives its lock; 0: forever
	replicas  int64         // WAIT for this many replicas after an acquisition; 0: don't
	waitFor   time.Duration
	log       *slog.Logger
	noNotify  bool     // WithoutNotifications
	recv      receiver // the release channels this process listens to
}

var (
	_ core.LockStore = (*Store)(nil)
	_ core.Lister    = (*Store)(nil)
)

// DefaultFloorRetention is how long a key's floor outlives its last lock,
// unless [WithFloorRetention] says otherwise.
const DefaultFloorRetention = 24 * time.Hour

// Option configures a [Store].
type Option func(*Store)

// WithPrefix sets the prefix of every Redis key the store writes (default
// [DefaultPrefix], "leasehold:"). Stores that share a prefix share their
// locks. It must not be empty and must not hold '{' or '}'.
func WithPrefix(prefix string) Option { return func(s *Store) { s.prefix = prefix } }

// WithFloorRetention sets how long a key's floor (its last token) is kept
// after its last lock ends, released or expired (default
// [DefaultFloorRetention], a day). Tokens are also floored at the server's
// clock, so a floor matters only while that clock could be behind the
// key's last token: after a step back of the clock, or a failover to a
// server whose clock is behind. Every key acquired within the retention
// costs one small Redis key. 0 keeps floors forever.
func WithFloorRetention(d time.Duration) Option { return func(s *Store) { s.retention = d } }

// WithReplicas makes every acquisition wait, with Redis's WAIT command, until
// at least n replicas have acknowledged it, for up to timeout. An
// acquisition that fewer replicas acknowledged in time is reported as an
// error matching [ErrNotReplicated], which [core.Locks] answers by releasing
// the key, as after any failed acquisition: a lock that only the
// primary knows is lost if the primary fails over before replicating it.
// WAIT narrows that window; it does not make Redis strongly consistent (a
// failover may still promote a replica that missed the write).
func WithReplicas(n int, timeout time.Duration) Option {
	return func(s *Store) { s.replicas, s.waitFor = int64(n), timeout }
}

// WithLogger sets where the store logs the loss and return of its release
// notifications (default slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(s *Store) { s.log = l } }

// WithoutNotifications makes the store subscribe to nothing: waiters of
// this process learn of releases by other processes at their backoff
// steps and of expiries from [Store.TryAcquire], and no pub/sub traffic
// reaches the server. Releases still publish, for other stores.
func WithoutNotifications() Option { return func(s *Store) { s.noNotify = true } }

// ErrNotReplicated is matched by the error of an acquisition that fewer
// replicas acknowledged than [WithReplicas] asked for.
var ErrNotReplicated = errors.New("rueidisstore: acquisition not acknowledged by enough replicas")

// New returns a Store on client: a standalone, Sentinel or Cluster client
// the application already has. The Store does not close it. New sends
// nothing to the server.
//
// The server must be Redis 7.0 or newer, or Valkey 7.2 or newer, with
// maxmemory-policy noeviction (see docs/redis.md).
func New(client rueidis.Client, opts ...Option) (*Store, error) {
	if err := core.ValidateHandle("rueidis.Client", client); err != nil {
		return nil, fmt.Errorf("rueidisstore: %w", err)
	}
	s := &Store{client: client, prefix: DefaultPrefix, retention: DefaultFloorRetention}
	for i, opt := range opts {
		if opt == nil {
			return nil, fmt.Errorf("rueidisstore: option %d is nil: %w", i, core.ErrInvalidArgument)
		}
		opt(s)
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	if err := checkPrefix(s.prefix); err != nil {
		return nil, err
	}
	switch {
	case s.retention < 0 || s.retention%time.Millisecond != 0:
		return nil, fmt.Errorf("rueidisstore: floor retention %v: want 0 (forever) or a whole number of milliseconds: %w", s.retention, core.ErrInvalidArgument)
	case s.replicas < 0:
		return nil, fmt.Errorf("rueidisstore: %d replicas: %w", s.replicas, core.ErrInvalidArgument)
	case s.replicas > 0 && s.waitFor < time.Millisecond:
		// WAIT's timeout 0 means forever.
		return nil, fmt.Errorf("rueidisstore: replica timeout %v: want at least 1ms: %w", s.waitFor, core.ErrInvalidArgument)
	}
	return s, nil
}

// Valid implements [core.Validator]: a Store is usable only as [New]
// makes it, so [core.New] refuses a zero value.
func (s *Store) Valid() error {
	if s == nil || s.client == nil || s.prefix == "" {
		return errors.New("rueidisstore: not made by New")
	}
	return nil
}

// checkCtx refuses a nil ctx, as an error matching [core.ErrInvalidArgument].
func checkCtx(ctx context.Context) error {
	if err := core.ValidateContext(ctx); err != nil {
		return fmt.Errorf("rueidisstore: %w", err)
	}
	return nil
}

// String describes the store, for start-up logs: the client's mode and the
// key prefix (never an address or a credential).
func (s *Store) String() string {
	if s.Valid() != nil {
		return "rueidisstore (not made by New)"
	}
	return fmt.Sprintf("rueidisstore (%s, prefix %q)", s.client.Mode(), s.prefix)
}

func opError(op, key string, err error) error {
	return fmt.Errorf("rueidisstore: %s %q: %w", op, key, err)
}

// Acquire implements [core.LockStore]. Locks are not re-entrant: an owner
// that holds key gets false, like any other.
//
// It sends one script, never twice. When the outcome is unknown (a lost
// connection or reply, a context that ended while the script was on its
// way), the key may have been taken for owner: Acquire returns the error,
// and [core.Locks], which assumes the store said yes, releases the key for
// owner so that it does not stay locked until its ttl. With [WithReplicas],
// an acquisition too few replicas acknowledged is an error too, released
// the same way. A caller of the store itself releases after an error.
func (s *Store) Acquire(ctx context.Context, key, owner string, ttl time.Duration) (int64, bool, error) {
	token, ok, _, err := s.acquire(ctx, key, owner, ttl)
	return token, ok, err
}

// acquire is Acquire and TryAcquire: on refusal, it also answers the
// holder's time left.
func (s *Store) acquire(ctx context.Context, key, owner string, ttl time.Duration) (int64, bool, time.Duration, error) {
	if ctx == nil {
		return 0, false, 0, checkCtx(ctx)
	}
	a := s.args(key, ttl)
	var res, wait rueidis.RedisResult
	if s.replicas > 0 {
		res, wait = s.acquireWithWait(ctx, a, owner)
	} else {
		res = acquireScript.run(ctx, s.client, []string{a.lock, a.floor}, owner, a.ttl, a.floorTTL)
	}
	token, err := res.AsInt64()
	if err != nil {
		return 0, false, 0, opError("acquire", key, typed(err))
	}
	if token <= 0 {
		return 0, false, time.Duration(-token) * time.Millisecond, nil
	}
	if s.replicas > 0 {
		acked, err := wait.AsInt64()
		if err == nil && acked < s.replicas {
			err = fmt.Errorf("%w: %d of %d acknowledged within %v", ErrNotReplicated, acked, s.replicas, s.waitFor)
		}
		if err != nil {
			return 0, false, 0, opError("acquire", key, fmt.Errorf("WAIT: %w", err))
		}
	}
	return token, true, 0, nil
}

// acquireWithWait runs the acquire script, then, if it took the key, WAIT,
// on one dedicated connection: WAIT counts the replicas that have the writes
// of its own connection. A failed try sends no WAIT, so it never waits.
func (s *Store) acquireWithWait(ctx context.Context, a lockArgs, owner string) (res, wait rueidis.RedisResult) {
	s.client.Dedicated(func(c rueidis.DedicatedClient) error { //nolint:errcheck // the results carry the errors
		res = acquireScript.run(ctx, c, []string{a.lock, a.floor}, owner, a.ttl, a.floorTTL)
		if token, err := res.AsInt64(); err == nil && token > 0 {
			wait = c.Do(ctx, c.B().Wait().Numreplicas(s.replicas).Timeout(s.waitFor.Milliseconds()).Build())
		}
		return nil
	})
	return res, wait
}

// Renew implements [core.LockStore]. It also moves the floor key's expiry,
// so the floor outlives the lock by the retention.
func (s *Store) Renew(ctx context.Context, key, owner string, ttl time.Duration) (bool, error) {
	if ctx == nil {
		return false, checkCtx(ctx)
	}
	a := s.args(key, ttl)
	n, err := renewScript.run(ctx, s.client, []string{a.lock, a.floor}, owner, a.ttl, a.floorTTL).AsInt64()
	if err != nil {
		return false, opError("renew", key, typed(err))
	}
	return n == 1, nil
}

// Release implements [core.LockStore]. The floor key stays, so the key's
// next token is greater than this lock's.
func (s *Store) Release(ctx context.Context, key, owner string) (bool, error) {
	if ctx == nil {
		return false, checkCtx(ctx)
	}
	lock := s.args(key, 0).lock
	n, err := releaseScript.run(ctx, s.client, []string{lock, lock + releasedSuffix}, owner).AsInt64()
	if err != nil {
		return false, opError("release", key, typed(err))
	}
	return n == 1, nil
}
