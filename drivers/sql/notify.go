package sqlstore

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/leasehold/leasehold/core"
)

var (
	_ core.Notifier    = (*Store)(nil)
	_ core.TryAcquirer = (*Store)(nil)
)

// releasedSuffix ends the name of the PostgreSQL channel on which the
// release statement notifies: <table>_released, with the key as payload.
const releasedSuffix = "_released"

// Listener receives PostgreSQL notifications for a [Store], on one
// connection of its own: drivers provide it (drivers/pgx does for
// pgxpool.Pool and for database/sql over pgx's stdlib). Give it with
// [WithListener].
type Listener interface {
	// Listen sends LISTEN channel on a connection it holds, calls ready
	// once that is in effect, then calls notify with the payload of each
	// notification on channel, until ctx ends or the connection fails. It
	// returns why it ended (ctx's error when ctx ended). Before returning
	// it stops listening (UNLISTEN, or closing the connection), so that a
	// pooled connection goes back clean.
	Listen(ctx context.Context, channel string, ready func(), notify func(payload string)) error
}

// WithListener makes a PostgreSQL store wake the waiters of this process
// when a release by any process commits: its release statement notifies
// the table's channel (pg_notify, delivered at commit), and l listens to
// it on one connection, opened at the first wait and closed 1s after the
// last. A LISTEN that fails (a pooler in transaction mode cannot LISTEN)
// is logged once as a warning; the store then works without
// notifications, its waiters trying at the end of the holder's lease and
// at their backoff steps, and listens again every 5s while waiters
// remain. It has no effect on MySQL and SQLite, which have no
// notifications.
func WithListener(l Listener) Option { return func(o *options) { o.listener = l } }

// WithoutNotifications makes the store listen to nothing, whatever
// listener it was given (drivers/pgx gives one by default): for a
// connection pooler in transaction mode, which cannot LISTEN. Releases
// still notify, for other stores.
func WithoutNotifications() Option { return func(o *options) { o.noNotify = true } }

// WithLogger sets where the store logs the loss and return of its
// notifications (default slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.log = l } }

// Timings of the listener.
const (
	// listenLinger is how long the store keeps listening after its last
	// waiter left: short, since the connection is held from its pool (and
	// a pool's Close waits for it).
	listenLinger = time.Second
	listenRetry  = 5 * time.Second // between failed LISTENs
)

// listening is a Store's side of its notifications: the waiters by key,
// and the one listening goroutine that runs while there are waiters (and
// listenLinger more).
type listening struct {
	mu      sync.Mutex
	keys    map[string]map[*func()]struct{}
	running bool
	failed  bool        // the last LISTEN failed, and none has worked since
	idle    *time.Timer // set while no waiter is left
	stop    context.CancelFunc
	done    chan struct{} // closed when the goroutine of stop has ended
}

// Subscribe implements [core.Notifier]. On PostgreSQL with a [Listener], a
// release of key by any process wakes wake when it commits; LISTEN taking
// effect (at first, and again after a lost connection) wakes every waiter.
// Otherwise it returns live false: waiters then try at the end of the
// holder's lease (see [Store.TryAcquire]) and at their backoff steps.
func (s *Store) Subscribe(key string, wake func()) (unsubscribe func(), live bool) {
	if s.Valid() != nil || s.listener == nil || s.st.releaseNotify.sql == "" {
		return func() {}, false
	}
	r := &s.notes
	id := &wake
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.keys == nil {
		r.keys = make(map[string]map[*func()]struct{})
	}
	set := r.keys[key]
	if set == nil {
		set = make(map[*func()]struct{})
		r.keys[key] = set
	}
	set[id] = struct{}{}
	if r.idle != nil {
		r.idle.Stop()
		r.idle = nil
	}
	if !r.running {
		ctx, cancel := context.WithCancel(context.Background())
		r.running, r.stop = true, cancel
		prev := r.done
		r.done = make(chan struct{})
		go s.listen(ctx, prev, r.done)
	}
	return func() { s.unsubscribe(key, id) }, !r.failed
}

// unsubscribe drops a waiter, and stops listening listenLinger after the
// last one left.
func (s *Store) unsubscribe(key string, id *func()) {
	r := &s.notes
	r.mu.Lock()
	defer r.mu.Unlock()
	set := r.keys[key]
	delete(set, id)
	if len(set) == 0 {
		delete(r.keys, key)
	}
	if len(r.keys) > 0 || !r.running || r.idle != nil {
		return
	}
	var t *time.Timer
	t = time.AfterFunc(listenLinger, func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.idle != t {
			return // a waiter came back
		}
		r.idle = nil
		r.running = false
		r.stop()
	})
	r.idle = t
}

// wake wakes the waiters of key, or of every key if all.
func (s *Store) wake(key string, all bool) {
	r := &s.notes
	r.mu.Lock()
	defer r.mu.Unlock()
	for k, set := range r.keys {
		if all || k == key {
			for w := range set {
				(*w)()
			}
		}
	}
}

// listen runs the listener until ctx ends, again after each failure. It
// starts once prev (an earlier listening goroutine) has ended.
func (s *Store) listen(ctx context.Context, prev, done chan struct{}) {
	defer close(done)
	if prev != nil {
		<-prev
	}
	channel := s.table + releasedSuffix
	r := &s.notes
	for {
		ready := func() {
			r.mu.Lock()
			back := r.failed
			r.failed = false
			r.mu.Unlock()
			if back {
				s.log.Info(s.name+": listening for release notifications again", "channel", channel)
			}
			s.wake("", true) // releases before now went unseen: try now
		}
		err := s.listener.Listen(ctx, channel, ready, func(key string) { s.wake(key, false) })
		if ctx.Err() != nil {
			return
		}
		r.mu.Lock()
		first := !r.failed
		r.failed = true
		r.mu.Unlock()
		if first {
			if err == nil {
				err = errors.New("the listener returned")
			}
			s.log.Warn(s.name+": cannot LISTEN for release notifications; waiters fall back to the holder's lease end and their backoff (behind a pooler in transaction mode, use WithoutNotifications)", "channel", channel, "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(listenRetry):
		}
	}
}
