package core

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// MemoryStore is a [LockStore], a [Lister], a [BatchRenewer], a
// [Notifier] and a [TryAcquirer] in this process's memory. It excludes callers in this process only: two instances
// of a service each have their own, so it is right for a single instance and
// for tests, and wrong for anything else.
// [New] logs that limit when it starts on one, and refuses one when
// [EnvInstances] says the service runs as several instances (see
// [AllowMemoryStore]).
type MemoryStore struct {
	clock Clock

	mu   sync.Mutex
	next int64 // the token source
	keys map[string]*memoryEntry
	subs map[string]map[*func()]struct{} // Notifier subscriptions by key
}

type memoryEntry struct {
	owner     string // "" once released
	token     int64  // the last token drawn for the key: its floor
	expiresAt time.Time
}

// MemoryOption configures a [MemoryStore].
type MemoryOption func(*MemoryStore)

// WithMemoryClock makes the store measure expiry on c instead of the system clock.
// Tests pass the same [ManualClock] they advance.
func WithMemoryClock(c Clock) MemoryOption {
	return func(s *MemoryStore) {
		if c != nil {
			s.clock = c
		}
	}
}

// NewMemoryStore returns an empty in-memory store.
func NewMemoryStore(opts ...MemoryOption) *MemoryStore {
	s := &MemoryStore{clock: SystemClock(), keys: make(map[string]*memoryEntry)}
	for _, o := range opts {
		o(s)
	}
	return s
}

// String describes the store and its limit, for the start-up log.
func (s *MemoryStore) String() string {
	return "memory store (excludes callers in this process only)"
}

// live returns key's entry if a live lock holds it. Callers hold s.mu.
func (s *MemoryStore) live(key string, now time.Time) *memoryEntry {
	e := s.keys[key]
	if e == nil || e.owner == "" || !now.Before(e.expiresAt) {
		return nil
	}
	return e
}

// Acquire implements [LockStore].
func (s *MemoryStore) Acquire(ctx context.Context, key, owner string, ttl time.Duration) (int64, bool, error) {
	token, ok, _, err := s.TryAcquire(ctx, key, owner, ttl)
	return token, ok, err
}

// TryAcquire implements [TryAcquirer]: Acquire, and on refusal the time
// the holder's lease has left.
func (s *MemoryStore) TryAcquire(ctx context.Context, key, owner string, ttl time.Duration) (int64, bool, time.Duration, error) {
	if err := errContext(ctx); err != nil {
		return 0, false, 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock.Now()
	if e := s.live(key, now); e != nil {
		return 0, false, e.expiresAt.Sub(now), nil
	}
	e := s.keys[key]
	if e == nil {
		e = &memoryEntry{}
		s.keys[key] = e
	}
	// The per-key floor keeps tokens growing after ResetTokens.
	s.next = max(s.next+1, e.token+1)
	*e = memoryEntry{owner: owner, token: s.next, expiresAt: now.Add(ttl)}
	return e.token, true, 0, nil
}

// Subscribe implements [Notifier]: a release of key calls wake. An expiry
// calls nothing; a waiter learns the lease's end from TryAcquire.
func (s *MemoryStore) Subscribe(key string, wake func()) (unsubscribe func(), live bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.subs == nil {
		s.subs = make(map[string]map[*func()]struct{})
	}
	set := s.subs[key]
	if set == nil {
		set = make(map[*func()]struct{})
		s.subs[key] = set
	}
	id := &wake
	set[id] = struct{}{}
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		delete(set, id)
		if len(set) == 0 && s.subs[key] != nil && len(s.subs[key]) == 0 {
			delete(s.subs, key)
		}
	}, true
}

// Renew implements [LockStore].
func (s *MemoryStore) Renew(ctx context.Context, key, owner string, ttl time.Duration) (bool, error) {
	if err := errContext(ctx); err != nil {
		return false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.renew(key, owner, ttl, s.clock.Now()), nil
}

// renew moves the expiry of owner's live lock on key. Callers hold s.mu.
func (s *MemoryStore) renew(key, owner string, ttl time.Duration, now time.Time) bool {
	e := s.live(key, now)
	if e == nil || e.owner != owner {
		return false
	}
	e.expiresAt = now.Add(ttl)
	return true
}

// memoryMaxBatch bounds a batch renewal, so that one holds the store's
// mutex for a short while only.
const memoryMaxBatch = 1000

// MaxBatch implements [BatchRenewer]: 1000 leases a call.
func (s *MemoryStore) MaxBatch() int { return memoryMaxBatch }

// RenewBatch implements [BatchRenewer], under one acquisition of the
// store's mutex. More than [MemoryStore.MaxBatch] leases is an error
// matching [ErrInvalidArgument].
func (s *MemoryStore) RenewBatch(ctx context.Context, leases []Lease) ([]bool, error) {
	if err := errContext(ctx); err != nil {
		return nil, err
	}
	if len(leases) > memoryMaxBatch {
		return nil, fmt.Errorf("%w: %d leases in one batch, more than %d", ErrInvalidArgument, len(leases), memoryMaxBatch)
	}
	renewed := make([]bool, len(leases))
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock.Now()
	for i, l := range leases {
		renewed[i] = s.renew(l.Key, l.Owner, l.TTL, now)
	}
	return renewed, nil
}

// Release implements [LockStore]. The entry stays, owner cleared, as the
// key's token floor.
func (s *MemoryStore) Release(ctx context.Context, key, owner string) (bool, error) {
	if err := errContext(ctx); err != nil {
		return false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.live(key, s.clock.Now())
	if e == nil || e.owner != owner {
		return false, nil
	}
	e.owner = ""
	for wake := range s.subs[key] {
		(*wake)()
	}
	return true, nil
}

// List implements [Lister].
func (s *MemoryStore) List(ctx context.Context, prefix string) ([]LockInfo, error) {
	if err := errContext(ctx); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock.Now()
	var out []LockInfo
	for k := range s.keys {
		if e := s.live(k, now); e != nil && strings.HasPrefix(k, prefix) {
			out = append(out, LockInfo{Key: k, Owner: e.owner, Token: e.token, ExpiresIn: e.expiresAt.Sub(now)})
		}
	}
	slices.SortFunc(out, func(a, b LockInfo) int { return strings.Compare(a.Key, b.Key) })
	return out, nil
}

// ResetTokens sends the store's token source back to zero, as a restore from
// an old backup would. Keys keep their floors, so their tokens still grow;
// the conformance kit uses it to prove that. It has the signature of every
// store's ResetTokens, and never fails.
func (s *MemoryStore) ResetTokens(context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.next = 0
	return nil
}

// errContext is ctx's error, or the error of a nil ctx.
func errContext(ctx context.Context) error {
	if err := ValidateContext(ctx); err != nil {
		return err
	}
	return ctx.Err()
}
