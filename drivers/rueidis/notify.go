package rueidisstore

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"

	"github.com/leasehold/leasehold/core"
)

var (
	_ core.Notifier    = (*Store)(nil)
	_ core.TryAcquirer = (*Store)(nil)
)

// releasedSuffix ends the name of a lock's release channel: the lock key
// and this suffix, so that the channel shares the lock's hash slot and the
// release script publishes it with SPUBLISH on the lock's own node.
const releasedSuffix = ":released"

// resubscribeDelay spaces the subscriptions of a channel whose Receive
// ended while it still had waiters (a lost connection rueidis gave up on,
// a slot that moved): the waiters keep their backoff meanwhile.
const resubscribeDelay = 100 * time.Millisecond

// subscriptionLinger is how long a channel stays subscribed after its
// last waiter left, so that the waiters of a busy key reuse a confirmed
// subscription instead of sending SSUBSCRIBE and SUNSUBSCRIBE per wait.
const subscriptionLinger = 10 * time.Second

// receiver is a Store's side of its release channels: one sharded
// subscription per key that has waiters in this process, on the client's
// own connections (rueidis carries pub/sub on them), shared by every
// waiter of that key.
type receiver struct {
	mu      sync.Mutex
	subs    map[string]*channelSub   // by channel
	closing map[string]chan struct{} // by channel: an ended subscription still unsubscribing
}

// channelSub is one channel's subscription and its waiters.
type channelSub struct {
	wakes  map[*func()]struct{}
	cancel context.CancelFunc
	idle   *time.Timer   // set while it has no waiter
	done   chan struct{} // closed once its SUNSUBSCRIBE is sent
}

// wakeAll calls every waiter of sub. Callers hold r.mu.
func (sub *channelSub) wakeAll() {
	for w := range sub.wakes {
		(*w)()
	}
}

// Subscribe implements [core.Notifier]: a waiter on key is woken when the
// release script publishes the key's release on its channel
// (prefix{key}:released, with SPUBLISH), when the channel's subscription is
// confirmed, and each time rueidis resubscribes it after a reconnection,
// since releases may have gone unseen meanwhile. The first waiter of a key
// sends SSUBSCRIBE; the subscription ends (SUNSUBSCRIBE) 10s after its
// last waiter left. Nobody waits for either. An expiry publishes nothing:
// a waiter learns the lease's end from [Store.TryAcquire].
func (s *Store) Subscribe(key string, wake func()) (unsubscribe func(), live bool) {
	if s.Valid() != nil || s.noNotify {
		return func() {}, false
	}
	channel := s.args(key, 0).lock + releasedSuffix
	r := &s.recv
	id := &wake
	r.mu.Lock()
	sub := r.subs[channel]
	if sub == nil {
		if r.subs == nil {
			r.subs = make(map[string]*channelSub)
			r.closing = make(map[string]chan struct{})
		}
		ctx, cancel := context.WithCancel(context.Background())
		sub = &channelSub{wakes: make(map[*func()]struct{}), cancel: cancel, done: make(chan struct{})}
		r.subs[channel] = sub
		// An ended subscription of the channel unsubscribes first, so
		// that its SUNSUBSCRIBE cannot undo this SSUBSCRIBE.
		go s.receive(ctx, channel, sub, r.closing[channel])
	} else if sub.idle != nil {
		sub.idle.Stop()
		sub.idle = nil
	}
	sub.wakes[id] = struct{}{}
	r.mu.Unlock()
	return func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		delete(sub.wakes, id)
		if len(sub.wakes) > 0 || sub.idle != nil || r.subs[channel] != sub {
			return
		}
		var t *time.Timer
		t = time.AfterFunc(subscriptionLinger, func() {
			r.mu.Lock()
			defer r.mu.Unlock()
			if sub.idle != t || r.subs[channel] != sub {
				return // a waiter came back
			}
			delete(r.subs, channel)
			r.closing[channel] = sub.done
			sub.cancel()
		})
		sub.idle = t
	}, true
}

// receive keeps channel subscribed until ctx ends, waking sub's waiters on
// each message and each confirmed subscription. It starts once prev (the
// channel's previous subscription, if any) has unsubscribed.
func (s *Store) receive(ctx context.Context, channel string, sub *channelSub, prev chan struct{}) {
	r := &s.recv
	defer func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		close(sub.done)
		if r.closing[channel] == sub.done {
			delete(r.closing, channel)
		}
	}()
	if prev != nil {
		<-prev
	}
	wake := func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		sub.wakeAll()
	}
	var lost atomic.Bool
	// loss logs, once until the subscription is back, that it was lost.
	loss := func(err error) {
		if !lost.Swap(true) {
			s.log.Warn("rueidisstore: lost the subscription to release notifications; waiters fall back to their backoff until it is back", "channel", channel, "err", err)
		}
	}
	hooked := rueidis.WithOnSubscriptionHook(ctx, func(ps rueidis.PubSubSubscription) {
		if ps.Kind != "ssubscribe" {
			return
		}
		if lost.Swap(false) {
			s.log.Info("rueidisstore: release notifications are back", "channel", channel)
		}
		wake() // confirmed, first or again: try now
	})
	hooked = rueidis.WithOnReceiveReturnHook(hooked, func(err error, c rueidis.CommandClient) error {
		if ctx.Err() == nil {
			// The connection went away under the subscription; rueidis
			// resubscribes on a new one without returning, and the
			// confirmation (see the subscription hook) logs the return.
			if err != nil && !errors.Is(err, rueidis.ErrClosing) {
				loss(err)
			}
			return err
		}
		// Ended by the store: unsubscribe on the connection that
		// subscribed (rueidis only forgets the channel locally).
		return c.Do(context.Background(), c.B().Sunsubscribe().Channel(channel).Build()).Error()
	})
	for {
		err := s.client.Receive(hooked, s.client.B().Ssubscribe().Channel(channel).Build(), func(rueidis.PubSubMessage) { wake() })
		if ctx.Err() != nil {
			return
		}
		// Still wanted: the connection or the slot went away. The waiters
		// keep their backoff until the subscription is confirmed again,
		// which wakes them (not now: the connection is likely broken).
		if errors.Is(err, rueidis.ErrClosing) {
			// The application is closing the client (or it cannot
			// connect at all): nothing to warn about here.
			s.log.Debug("rueidisstore: release notifications stopped", "channel", channel, "err", err)
		} else {
			loss(err)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(resubscribeDelay):
		}
	}
}

// TryAcquire implements [core.TryAcquirer]: Acquire, and on refusal the
// holder's time left, read with PTTL by the same script.
func (s *Store) TryAcquire(ctx context.Context, key, owner string, ttl time.Duration) (int64, bool, time.Duration, error) {
	return s.acquire(ctx, key, owner, ttl)
}
