package core

import (
	"context"
	"math/rand/v2"
	"sync"
	"time"
)

// Notifier is an optional capability of a [LockStore]: telling waiters that
// a key may have become free, so that a waiting [Locks.Acquire] tries again
// at once instead of at its next backoff step. [Locks] finds it by type
// assertion, as it finds [BatchRenewer].
//
// The rules:
//
//   - Subscribe before trying. A waiting Acquire subscribes before its
//     first try, so that a release between a refused try and the wait is
//     never missed. Subscribe does not block on the server: a store whose
//     subscription is confirmed later (a SUBSCRIBE on its way, a LISTEN
//     being set up) calls wake once it is confirmed, so that the waiter
//     tries again after the confirmation.
//   - Wakes are hints. wake may be called when the key is still held, more
//     than once, or late; a waiter woken for nothing tries once more and
//     waits again. A wake never grants anything: the waiter still takes
//     the key with the store's atomic Acquire.
//   - Losing wakes costs latency only. A lost connection, a dropped
//     message, a listener that could not start: the waiter keeps a backoff
//     (seconds when notifications are live) as its floor of liveness. A
//     store that resubscribes after a reconnection wakes every waiter,
//     since releases may have gone unseen meanwhile.
//   - One subscription per store client. Waiters of one store share its
//     connection (and, per key, its subscription): Subscribe must not
//     open a connection per waiter.
//
// Subscribe returns live false when the store cannot notify now (it was
// made without notifications, or its listener failed): the waiter then
// keeps its short backoff. unsubscribe is called exactly once, when the
// waiter stops waiting; a wake that races it may still arrive. wake is
// cheap and never blocks, so a store may call it from its receiving
// goroutine.
type Notifier interface {
	// Subscribe asks the store to call wake when key may have become free.
	Subscribe(key string, wake func()) (unsubscribe func(), live bool)
}

// TryAcquirer is an optional capability of a [LockStore]: an Acquire that,
// when the key is taken, also tells how long the holder's lease has left on
// the store's clock, so that a waiting [Locks.Acquire] tries again when
// that lease ends (plus a millisecond) rather than at a backoff step.
// [Locks] uses it instead of Acquire when the store has it.
//
// TryAcquire follows every rule of Acquire; token and acquired mean what
// they mean there. left is the holder's time left when acquired is false
// and the store could read it in the same atomic step; 0 when unknown. It
// is a hint: the holder may renew or release meanwhile.
type TryAcquirer interface {
	// TryAcquire is Acquire, and on refusal the lease's time left.
	TryAcquire(ctx context.Context, key, owner string, ttl time.Duration) (token int64, acquired bool, left time.Duration, err error)
}

// expiryMargin is how long after the holder's lease ends, as the store
// reported it, a waiter tries again: the store's clock must have passed it.
const expiryMargin = time.Millisecond

// notifiedBackoff is the backoff range of a waiter whose store notifies it:
// the floor of liveness against lost notifications, jittered.
const (
	notifiedBackoffMin = 2500 * time.Millisecond
	notifiedBackoffMax = 5 * time.Second
)

// waiter is one waiting Acquire: its wakes, whoever sends them, fold into
// one pending signal.
type waiter struct {
	ch chan struct{}
}

func newWaiter() *waiter { return &waiter{ch: make(chan struct{}, 1)} }

// wake signals the waiter; it never blocks.
func (w *waiter) wake() {
	select {
	case w.ch <- struct{}{}:
	default:
	}
}

// waiters is the registry of this instance's waiting Acquires by key, so
// that a release made through the same Locks wakes them at once, on every
// store.
type waiters struct {
	mu   sync.Mutex
	keys map[string]map[*waiter]struct{}
}

func (ws *waiters) add(key string, w *waiter) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.keys == nil {
		ws.keys = make(map[string]map[*waiter]struct{})
	}
	set := ws.keys[key]
	if set == nil {
		set = make(map[*waiter]struct{})
		ws.keys[key] = set
	}
	set[w] = struct{}{}
}

func (ws *waiters) remove(key string, w *waiter) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	set := ws.keys[key]
	delete(set, w)
	if len(set) == 0 {
		delete(ws.keys, key)
	}
}

// wakeAll wakes every waiter of this instance, as Close does so that they
// see it at once.
func (ws *waiters) wakeAll() {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	for _, set := range ws.keys {
		for w := range set {
			w.wake()
		}
	}
}

// wake wakes every waiter of key in this instance.
func (ws *waiters) wake(key string) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	for w := range ws.keys[key] {
		w.wake()
	}
}

// subscribe registers w for key: in this instance, and with the store when
// it is a [Notifier]. It reports whether the store notifies, and returns
// what undoes it.
func (l *Locks) subscribe(key string, w *waiter) (notified bool, unsubscribe func()) {
	l.waiting.add(key, w)
	var storeOff func()
	if n, ok := l.store.(Notifier); ok {
		storeOff, notified = n.Subscribe(key, w.wake)
	}
	return notified, func() {
		if storeOff != nil {
			storeOff()
		}
		l.waiting.remove(key, w)
	}
}

// tryAcquire is one try: TryAcquire when the store has it, else Acquire.
func (l *Locks) tryAcquire(ctx context.Context, key, owner string, ttl time.Duration) (int64, bool, time.Duration, error) {
	if t, ok := l.store.(TryAcquirer); ok {
		return t.TryAcquire(ctx, key, owner, ttl)
	}
	token, ok, err := l.store.Acquire(ctx, key, owner, ttl)
	return token, ok, 0, err
}

// nextTry is how long a refused waiter waits at most before its next try:
// its backoff step (seconds when the store notifies it), or the end of the
// holder's lease when the store told it, whichever comes first.
func nextTry(b *backoff, notified bool, left time.Duration) time.Duration {
	var d time.Duration
	if notified {
		d = notifiedBackoffMin + rand.N(notifiedBackoffMax-notifiedBackoffMin+1)
	} else {
		d = b.next()
	}
	if left > 0 {
		d = min(d, left+expiryMargin)
	}
	return d
}

// await waits d on clock, or until w is woken or ctx is done.
func await(ctx context.Context, clock Clock, w *waiter, d time.Duration) error {
	woke := make(chan struct{})
	t := clock.AfterFunc(d, func() { close(woke) })
	defer t.Stop()
	select {
	case <-woke:
		return nil
	case <-w.ch:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}
