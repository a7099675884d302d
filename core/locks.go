package core

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/leasehold/leasehold/core/connhint"
)

// Locks takes leases on a [LockStore] and keeps them: each held [Lock] is
// renewed every ttl/3 by one keeper shared by the instance (no goroutine
// per lock), and its context is cancelled the moment the holder can no longer
// be sure it holds it. A service creates one Locks per store at start-up and
// closes it at shutdown. It is safe for concurrent use.
type Locks struct {
	store    LockStore
	clock    Clock
	log      *slog.Logger
	onEvent  func(Event)
	observer Observer // nil when none
	ttl      time.Duration
	// ownerStart starts every owner id: the instance name and a slash.
	ownerStart string
	keeper     *keeper
	// base is the parent of renewal and release calls; Close cancels it
	// last, so no store call outlives the instance.
	base       context.Context
	cancelBase context.CancelFunc

	mu     sync.Mutex
	closed bool
	held   map[*Lock]struct{}
	tokens map[string]int64 // highest token seen per key, to catch a broken store
	// waiting holds the waiting Acquires, woken by this instance's releases.
	waiting waiters
	guards  guardRegistry // jobs and elections, shut down first by Close

	inCallback atomic.Int32 // user callbacks running now, see callback
}

// New returns a Locks instance on store. It logs, once, which store it uses.
// On a [MemoryStore] it fails with [ErrMemoryStoreRefused] when
// [EnvInstances] says the service runs as several instances, unless
// [AllowMemoryStore] is given.
func New(store LockStore, opts ...Option) (*Locks, error) {
	if err := validStore(store); err != nil {
		return nil, err
	}
	cfg := config{ttl: DefaultTTL}
	for i, o := range opts {
		if o == nil {
			return nil, fmt.Errorf("%w: option %d of New is nil", ErrInvalidArgument, i)
		}
		o(&cfg)
	}
	if err := ValidateTTL(cfg.ttl); err != nil {
		return nil, layer(err, "WithDefaultTTL")
	}
	if err := guardMemoryStore(store, cfg.memoryAllowed, os.Getenv); err != nil {
		return nil, err
	}
	if cfg.clock == nil {
		cfg.clock = SystemClock()
	}
	if cfg.logger == nil {
		cfg.logger = slog.Default()
	}
	if cfg.instance == "" {
		host, _ := os.Hostname()
		cfg.instance = fmt.Sprintf("%s:%d", host, os.Getpid())
	}
	given := cfg.instance
	cfg.instance = ownerPrefix(given)
	if cfg.instance != given {
		cfg.logger.Warn("leasehold: instance name changed to fit owner ids (at most 200 bytes of UTF-8, no NUL)", "given", given, "used", cfg.instance)
	}
	l := &Locks{
		store:      store,
		clock:      cfg.clock,
		log:        cfg.logger,
		onEvent:    cfg.onEvent,
		observer:   cfg.observer,
		ttl:        cfg.ttl,
		ownerStart: cfg.instance + "/",
		held:       make(map[*Lock]struct{}),
		tokens:     make(map[string]int64),
	}
	l.base, l.cancelBase = context.WithCancel(context.Background())
	l.guards.init()
	l.keeper = newKeeper(l)
	if _, ok := store.(*MemoryStore); ok {
		l.log.Warn("leasehold: using the memory store: it excludes callers in this process only; give every instance a shared store")
	} else {
		l.log.Info("leasehold: using store", "store", describe(store))
	}
	return l, nil
}

// maxInstanceName is the longest instance name, in bytes, kept in owner ids.
const maxInstanceName = 200

// ownerPrefix makes name fit the start of an owner id, which goes into text
// columns: valid UTF-8 (invalid bytes become "?"), no NUL ("?" too), at most
// maxInstanceName bytes (cut at a character boundary).
func ownerPrefix(name string) string {
	name = strings.ReplaceAll(strings.ToValidUTF8(name, "?"), "\x00", "?")
	if len(name) <= maxInstanceName {
		return name
	}
	cut := maxInstanceName
	for cut > 0 && !utf8.RuneStart(name[cut]) {
		cut--
	}
	return name[:cut]
}

func describe(store LockStore) string {
	if s, ok := store.(fmt.Stringer); ok {
		return s.String()
	}
	return fmt.Sprintf("%T", store)
}

// Store returns the store the instance was created on.
func (l *Locks) Store() LockStore { return l.store }

// Acquire takes key and returns the held [Lock]. By default it tries once; with
// [WithWait] it keeps trying until it succeeds, the wait ends, or ctx is
// done. A waiting Acquire tries again as soon as the key may be free: when
// a release through this Locks frees it, when the store notifies a release
// (a [Notifier]), when the holder's lease ends as the store reported it (a
// [TryAcquirer]), and in any case at its jittered backoff step (up to 1s,
// or 2.5s to 5s on a store that notifies), so that a lost notification
// costs latency, never a stuck waiter. A key held by someone else for the
// whole attempt is an error matching [ErrNotAcquired].
//
// The lock lives inside ctx: when ctx ends, the lock's context ends with it
// and the lock is released. Pass a context that lives as long as the work
// the lock protects (not, say, a request context that ends before it).
//
// When the store call fails (a timeout, a lost connection), the store may
// still have taken the key: the reply, not the request, may be what was
// lost. Acquire then releases the key, once within 2s, before it returns
// the error; if that fails too, it goes on trying in the background while
// the lease it may have taken could still be live (a ttl from the call),
// so that the key is free soon after the store answers again instead of
// held by nobody for the rest of its ttl.
func (l *Locks) Acquire(ctx context.Context, key string, opts ...AcquireOption) (*Lock, error) {
	cfg := acquireConfig{ttl: l.ttl, kind: KindLock}
	if len(opts) > 0 {
		var err error
		if cfg, err = cfg.with(opts); err != nil {
			return nil, err
		}
	}
	if err := l.check(key, cfg); err != nil {
		return nil, err
	}
	if err := ValidateContext(ctx); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("leasehold: acquire %q: %w", key, err)
	}
	owner := l.newOwner()
	waitEnd := l.clock.Now().Add(cfg.wait)
	backoff := newBackoff(cfg.ttl)
	// A waiting Acquire subscribes before its first try, so that a release
	// between a refused try and the wait wakes it (see Notifier).
	var w *waiter
	notified := false
	if cfg.wait > 0 {
		w = newWaiter()
		var unsubscribe func()
		notified, unsubscribe = l.subscribe(key, w)
		defer unsubscribe()
	}
	for {
		sent := l.clock.Now()
		octx, end := l.observe(ctx, Op{Type: OpAcquire, Key: key, Kind: cfg.kind})
		var (
			token int64
			ok    bool
			left  time.Duration
			err   error
		)
		if w != nil {
			token, ok, left, err = l.tryAcquire(octx, key, owner, cfg.ttl)
		} else {
			token, ok, err = l.store.Acquire(octx, key, owner, cfg.ttl)
		}
		end(ok, err)
		if err != nil {
			// The outcome is unknown: assume the store said yes.
			l.releaseUnknown(key, owner, cfg.kind, sent, cfg.ttl, err)
			return nil, fmt.Errorf("leasehold: acquire %q: %w", key, connhint.Wrap(err))
		}
		if ok {
			return l.hold(ctx, key, owner, token, cfg, sent)
		}
		waitLeft := waitEnd.Sub(l.clock.Now())
		if waitLeft <= 0 {
			return nil, fmt.Errorf("%w: %q", ErrNotAcquired, key)
		}
		if err := await(ctx, l.clock, w, min(nextTry(backoff, notified, left), waitLeft)); err != nil {
			return nil, fmt.Errorf("%w: %q: %w", ErrNotAcquired, key, err)
		}
		if l.isClosed() {
			return nil, ErrClosed
		}
	}
}

// WithLock runs fn while holding key, and releases the lock when fn returns
// or panics (the panic then goes on). fn's context is the lock's: it is
// cancelled when the lock is lost, and [LockFromContext] returns the lock
// from it. If fn returns nil but the lock was lost before it was released,
// WithLock returns the [*LockLostError]: fn's work may not have been alone.
func (l *Locks) WithLock(ctx context.Context, key string, fn func(ctx context.Context) error, opts ...AcquireOption) error {
	if fn == nil {
		return fmt.Errorf("%w: nil function", ErrInvalidArgument)
	}
	if err := ValidateContext(ctx); err != nil {
		return err
	}
	return l.observed(ctx, Op{Type: OpWithLock, Key: key, Kind: KindLock}, func(ctx context.Context, ran *bool) error {
		lk, err := l.Acquire(ctx, key, opts...)
		if err != nil {
			return err
		}
		*ran = true
		return lk.run(fn)
	})
}

func (l *Locks) check(key string, cfg acquireConfig) error {
	if err := ValidateKey(key); err != nil {
		return err
	}
	if err := ValidateTTL(cfg.ttl); err != nil {
		return err
	}
	if cfg.wait < 0 {
		return fmt.Errorf("%w: negative wait %v", ErrInvalidArgument, cfg.wait)
	}
	if l.isClosed() {
		return ErrClosed
	}
	return nil
}

// hold checks the token the store gave and starts keeping the lock.
func (l *Locks) hold(ctx context.Context, key, owner string, token int64, cfg acquireConfig, sent time.Time) (*Lock, error) {
	// Observed before the checks, not under l.mu: a refused grant is a
	// hold that ends at once.
	ctx, endHold := l.observe(ctx, Op{Type: OpHold, Key: key, Kind: cfg.kind})
	l.mu.Lock()
	var broken string
	switch last := l.tokens[key]; {
	case token <= 0:
		broken = "fencing tokens must be positive"
	case token <= last:
		broken = fmt.Sprintf("every acquisition of a key must get a greater token than the key had before (this process already saw %d)", last)
	case l.closed:
		// Close started while the store call was in flight: release the key.
	default:
		l.tokens[key] = token
	}
	if broken != "" || l.closed {
		closed := l.closed
		l.mu.Unlock()
		l.releaseUnheld(key, owner, cfg.kind, releaseTimeout)
		var err error = &StoreContractError{Key: key, Token: token, Rule: broken}
		if closed {
			err = ErrClosed
		}
		endHold(false, err)
		return nil, err
	}
	lk := newLock(l, ctx, key, owner, token, cfg, sent, endHold)
	l.held[lk] = struct{}{}
	l.mu.Unlock()
	l.keeper.hold(lk, sent)
	if l.debug() {
		l.log.Debug("leasehold: lock acquired", "key", key, "token", token, "owner", owner)
	}
	return lk, nil
}

// releaseUnheld releases a key that this process may hold in the store but
// must not keep (a grant it refused), within timeout. No Lock holds it, so
// the keeper never sees it.
func (l *Locks) releaseUnheld(key, owner string, kind LockKind, timeout time.Duration) {
	released, err := l.releaseOnce(key, owner, kind, timeout)
	switch {
	case err != nil:
		l.log.Warn("leasehold: could not release a lock this process must not keep; it expires after its ttl", "key", key, "err", connhint.Wrap(err))
	case released:
		l.log.Debug("leasehold: released a lock this process must not keep", "key", key)
	}
}

// releaseOnce sends one release of key for owner, within timeout.
func (l *Locks) releaseOnce(key, owner string, kind LockKind, timeout time.Duration) (bool, error) {
	// Not cancelled with base: a grant that raced Close arrives after Close
	// cancelled it, and must still be released.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(l.base), timeout)
	defer cancel()
	ctx, end := l.observe(ctx, Op{Type: OpRelease, Key: key, Kind: kind})
	released, err := l.store.Release(ctx, key, owner)
	end(released, err)
	return released, err
}

// Close shuts the instance down: job guards stop taking ticks and wait for
// their runs (bounded by ctx), job leases are handed back, elections step
// down, and then every other held lock is released. Afterwards every call
// fails with [ErrClosed]. Close returns the errors of the releases that
// failed; those locks expire after their ttl. Calling Close again does
// nothing.
//
// Close never waits on the instance's [Clock], so it returns on a
// [ManualClock] that nobody advances: a job lease whose run started less
// than a second ago is left in the store for the rest of that second
// (renewed once for that long, not waited for), so that instances firing
// the same tick a little later skip it.
func (l *Locks) Close(ctx context.Context) error {
	if err := ValidateContext(ctx); err != nil {
		return err
	}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	l.mu.Unlock()
	l.waiting.wakeAll() // waiting Acquires return ErrClosed now

	err := l.guards.shutdown(ctx)

	l.mu.Lock()
	locks := make([]*Lock, 0, len(l.held))
	for lk := range l.held {
		locks = append(locks, lk)
	}
	l.mu.Unlock()
	err = errors.Join(err, releaseAll(ctx, locks))

	l.keeper.stop()
	l.cancelBase()
	return err
}

// releaseAll releases locks, a few at a time, and joins their errors.
func releaseAll(ctx context.Context, locks []*Lock) error {
	errs := make([]error, len(locks))
	parallel(len(locks), maxConcurrentRenewals, func(i int) {
		var lost *LockLostError
		if err := locks[i].Release(ctx); err != nil && !errors.As(err, &lost) {
			errs[i] = err
		}
	})
	return errors.Join(errs...)
}

func (l *Locks) isClosed() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.closed
}

// forget drops a lock that is no longer held.
func (l *Locks) forget(lk *Lock) {
	l.mu.Lock()
	delete(l.held, lk)
	l.mu.Unlock()
}

// emit delivers ev to the event handler, if any, and survives its panic.
func (l *Locks) emit(ev Event) {
	if l.onEvent == nil {
		return
	}
	ev.Time = l.clock.Now()
	defer func() {
		if r := recover(); r != nil {
			l.log.Error("leasehold: event handler panicked", "event", ev.Type.String(), "panic", r)
		}
	}()
	l.callback(func() { l.onEvent(ev) })
}

// callback runs user code (an event handler, an election callback) while
// counting it, so that a Close or Election.Stop called from inside it does
// not wait for the firing or campaign that is running it, which would
// never end.
func (l *Locks) callback(fn func()) {
	l.inCallback.Add(1)
	defer l.inCallback.Add(-1)
	fn()
}

// newOwner returns a fresh owner id: the instance name, for operators, and
// 130 random bits, so that no other holder can guess it (as rand.Text
// makes them, in one allocation).
func (l *Locks) newOwner() string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
	var random [26]byte
	_, _ = rand.Read(random[:]) // never fails
	for i, b := range random {
		random[i] = alphabet[b%32]
	}
	return l.ownerStart + string(random[:])
}

// debug reports whether debug logs are on: the fast path skips building
// their attributes otherwise.
func (l *Locks) debug() bool {
	return l.log.Enabled(context.Background(), slog.LevelDebug)
}

func (l *Locks) reportLost(err *LockLostError) {
	attrs := []any{"key", err.Key, "token", err.Token, "reason", err.Reason.String()}
	if err.Err != nil {
		attrs = append(attrs, "err", connhint.Wrap(err.Err))
	}
	l.log.Warn("leasehold: lock lost; another holder may take it now", attrs...)
	l.emit(Event{Type: EventLockLost, Key: err.Key, Token: err.Token, Err: err})
}
