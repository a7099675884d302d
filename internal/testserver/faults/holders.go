package faults

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/leasehold/leasehold/core"
)

// witness wraps the store a core.Locks uses and notes, per owner, when the
// last Acquire or Renew that the store confirmed was sent. A holder must
// give up no later than the ttl after that.
type witness struct {
	core.LockStore

	mu        sync.Mutex
	confirmed map[string]time.Time
}

func (w *witness) note(owner string, sent time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.confirmed[owner] = sent
}

func (w *witness) Acquire(ctx context.Context, key, owner string, ttl time.Duration) (int64, bool, error) {
	sent := time.Now()
	token, ok, err := w.LockStore.Acquire(ctx, key, owner, ttl)
	if ok && err == nil {
		w.note(owner, sent)
	}
	return token, ok, err
}

func (w *witness) Renew(ctx context.Context, key, owner string, ttl time.Duration) (bool, error) {
	sent := time.Now()
	ok, err := w.LockStore.Renew(ctx, key, owner, ttl)
	if ok && err == nil {
		w.note(owner, sent)
	}
	return ok, err
}

// confirmedAt returns when owner's last confirmed call was sent.
func (w *witness) confirmedAt(owner string) time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.confirmed[owner]
}

// Loss is one lost lock, as the instance reported it.
type Loss struct {
	Key, Owner string
	// At is when the instance cancelled the lock's context.
	At time.Time
	// Confirmed is when the last Acquire or Renew the store confirmed
	// before the loss was sent. (A renewal stuck in a stalled network may
	// be confirmed after the loss; the holder no longer counts it.)
	Confirmed time.Time
	Reason    core.LossReason
	// Left is how long the store still held the lock after the loss: its
	// expiry in the store, read right after the loss, less the time of the
	// loss. (Renewals stuck in a stalled network cannot move it before the
	// network resumes.) It must be positive. Known is false when the store
	// could not say (the server was down, or had lost the lock).
	Left  time.Duration
	Known bool
}

// Holders is a core.Locks instance on a store that records its losses and,
// at each one, asks the server directly how long the lock has left there.
type Holders struct {
	Locks *core.Locks

	target  Target
	witness *witness

	mu       sync.Mutex
	owners   map[string]string // key → owner of this instance's lock on it
	losses   []Loss
	checks   []chan struct{} // one per loss, closed once its expiry was read
	warnings []Warning
}

// Warning is a line the instance logged at slog.LevelWarn or above.
type Warning struct {
	Msg string
	Key string // the "key" attribute, if any
}

// NewHolders starts an instance named name on store, a store of the
// target's, with locks of [TTL]. It is closed when t ends.
func NewHolders(t testing.TB, target Target, store core.LockStore, name string) *Holders {
	t.Helper()
	h := &Holders{target: target, witness: &witness{LockStore: store, confirmed: map[string]time.Time{}}, owners: map[string]string{}}
	l, err := core.New(h.witness, core.WithLogger(slog.New(warnings{h})),
		core.WithEventHandler(h.event), core.WithInstanceName(name), core.WithDefaultTTL(TTL))
	if err != nil {
		t.Fatal(err)
	}
	h.Locks = l
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = l.Close(ctx)
		h.Losses()
	})
	return h
}

// Warnings returns the warnings the instance logged about key.
func (h *Holders) Warnings(key string) []Warning {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []Warning
	for _, w := range h.warnings {
		if w.Key == key {
			out = append(out, w)
		}
	}
	return out
}

// warnings is the instance's log handler: it keeps the warnings, for
// Holders.Warnings, and drops the rest.
type warnings struct{ h *Holders }

func (w warnings) Enabled(_ context.Context, level slog.Level) bool { return level >= slog.LevelWarn }

func (w warnings) Handle(_ context.Context, r slog.Record) error {
	warn := Warning{Msg: r.Message}
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "key" {
			warn.Key = a.Value.String()
		}
		return true
	})
	w.h.mu.Lock()
	defer w.h.mu.Unlock()
	w.h.warnings = append(w.h.warnings, warn)
	return nil
}

func (w warnings) WithAttrs([]slog.Attr) slog.Handler { return w }
func (w warnings) WithGroup(string) slog.Handler      { return w }

// Acquire takes key and remembers its owner.
func (h *Holders) Acquire(ctx context.Context, key string, opts ...core.AcquireOption) (*core.Lock, error) {
	lk, err := h.Locks.Acquire(ctx, key, opts...)
	if err == nil {
		h.mu.Lock()
		h.owners[key] = lk.Owner()
		h.mu.Unlock()
	}
	return lk, err
}

// acquireRetrying takes key, retrying for up to limit while the store
// fails (a server down, a connection that broke), and waiting while the
// key is held. It returns how many tries failed with an error.
func (h *Holders) acquireRetrying(ctx context.Context, key string, limit time.Duration) (*core.Lock, int, error) {
	end := time.Now().Add(limit)
	var lk *core.Lock
	failed, err := retry(limit, func() (err error) {
		lk, err = h.Acquire(ctx, key, core.WithWait(max(time.Until(end), 0)))
		return err
	})
	return lk, failed, err
}

func (h *Holders) event(ev core.Event) {
	if ev.Type != core.EventLockLost {
		return
	}
	var lost *core.LockLostError
	if !errors.As(ev.Err, &lost) {
		return
	}
	h.mu.Lock()
	i, owner := len(h.losses), h.owners[ev.Key]
	h.losses = append(h.losses, Loss{Key: ev.Key, Owner: owner, At: ev.Time, Confirmed: h.witness.confirmedAt(owner), Reason: lost.Reason, Left: -1})
	done := make(chan struct{})
	h.checks = append(h.checks, done)
	h.mu.Unlock()
	// The handler must return quickly: ask the server from a goroutine.
	go func() {
		defer close(done)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		at, err := h.target.Expiry(ctx, ev.Key, owner)
		h.mu.Lock()
		h.losses[i].Left, h.losses[i].Known = at.Sub(ev.Time), err == nil
		h.mu.Unlock()
	}()
}

// Losses waits for the server checks in flight and returns the losses so
// far.
func (h *Holders) Losses() []Loss {
	h.mu.Lock()
	checks := slices.Clone(h.checks)
	h.mu.Unlock()
	for _, done := range checks {
		<-done
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.losses)
}

// awaitLosses waits, for up to limit, until the instance has reported n
// losses, and returns them. A lost lock's context ends before its loss
// event is sent: after Done, the loss may not be recorded yet.
func (h *Holders) awaitLosses(n int, limit time.Duration) []Loss {
	end := time.Now().Add(limit)
	for {
		if losses := h.Losses(); len(losses) >= n || time.Now().After(end) {
			return losses
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// CheckLosses checks every loss: reported for reason, before the store's
// expiry where the server could say, and, if bySend, no later than the ttl
// after the owner's last confirmed call was sent (a bound that a host
// loaded enough to delay the timers by more than the safety margin breaks,
// while the store, which counts from a later instant, still holds the
// lock). It returns how late each loss came after the holder's own
// deadline (the ttl less core.SafetyMargin after that send), and how long
// before the store's expiry it came (where known).
func CheckLosses(t testing.TB, losses []Loss, reason core.LossReason, bySend bool) (late, left []time.Duration) {
	t.Helper()
	margin := core.SafetyMargin(TTL)
	for _, l := range losses {
		if l.Reason != reason {
			t.Errorf("lock %s lost: %v; want %v", l.Key, l.Reason, reason)
		}
		if bySend && l.At.After(l.Confirmed.Add(TTL)) {
			t.Errorf("lock %s lost %v after its last confirmed renewal was sent, more than its ttl of %v", l.Key, l.At.Sub(l.Confirmed), TTL)
		}
		late = append(late, l.At.Sub(l.Confirmed.Add(TTL-margin)))
		if !l.Known {
			continue
		}
		if l.Left <= 0 {
			t.Errorf("lock %s lost %v after the store's expiry: the holder outlived its lease", l.Key, -l.Left)
		}
		left = append(left, l.Left)
	}
	return late, left
}
