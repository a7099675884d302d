package core_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold/core"
	"github.com/leasehold/leasehold/core/coretest"
)

// noPanic runs f and turns a panic into a test failure.
func noPanic(t *testing.T, what string, f func()) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Fatalf("%s panicked: %v", what, r)
		}
	}()
	f()
}

func TestBadInputs(t *testing.T) {
	clock := core.NewManualClock(t0)
	store := core.NewMemoryStore(core.WithMemoryClock(clock))
	spy := newSpy(store, clock)
	locks := coretest.NewLocks(t, spy, core.WithClock(clock))

	cases := []struct {
		name string
		key  string
		opts []core.AcquireOption
		want error
	}{
		{"empty key", "", nil, core.ErrInvalidKey},
		{"501 characters", strings.Repeat("k", 501), nil, core.ErrInvalidKey},
		{"501 emoji", strings.Repeat("🔒", 501), nil, core.ErrInvalidKey},
		{"invalid UTF-8", "jobs/\xff", nil, core.ErrInvalidKey},
		{"truncated UTF-8", "lock\xf0\x9f", nil, core.ErrInvalidKey},
		{"NUL", "jobs/\x00daily", nil, core.ErrInvalidKey},
		{"ttl 0", "k", []core.AcquireOption{core.WithTTL(0)}, core.ErrInvalidTTL},
		{"negative ttl", "k", []core.AcquireOption{core.WithTTL(-time.Second)}, core.ErrInvalidTTL},
		{"ttl 999µs", "k", []core.AcquireOption{core.WithTTL(999 * time.Microsecond)}, core.ErrInvalidTTL},
		{"ttl 1500µs", "k", []core.AcquireOption{core.WithTTL(1500 * time.Microsecond)}, core.ErrInvalidTTL},
		{"ttl 30s+1ns", "k", []core.AcquireOption{core.WithTTL(30*time.Second + 1)}, core.ErrInvalidTTL},
		{"negative wait", "k", []core.AcquireOption{core.WithWait(-time.Second)}, core.ErrInvalidArgument},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var err error
			noPanic(t, "Acquire", func() { _, err = locks.Acquire(context.Background(), c.key, c.opts...) })
			if !errors.Is(err, c.want) {
				t.Fatalf("Acquire: %v, want %v", err, c.want)
			}
			called := false
			noPanic(t, "WithLock", func() {
				err = locks.WithLock(context.Background(), c.key, func(context.Context) error { called = true; return nil }, c.opts...)
			})
			if !errors.Is(err, c.want) || called {
				t.Fatalf("WithLock: %v (fn called: %v), want %v", err, called, c.want)
			}
			if n := spy.count("acquire"); n != 0 {
				t.Fatalf("a bad input reached the store (%d calls)", n)
			}
		})
	}

	t.Run("nil fn", func(t *testing.T) {
		var err error
		noPanic(t, "WithLock", func() { err = locks.WithLock(context.Background(), "k", nil) })
		if !errors.Is(err, core.ErrInvalidArgument) {
			t.Fatalf("WithLock(nil): %v", err)
		}
		if n := spy.count("acquire"); n != 0 {
			t.Fatal("WithLock(nil) took the lock")
		}
	})
}

func TestGoodInputs(t *testing.T) {
	clock := core.NewManualClock(t0)
	store := core.NewMemoryStore(core.WithMemoryClock(clock))
	locks := coretest.NewLocks(t, store, core.WithClock(clock))
	for _, c := range []struct {
		name string
		key  string
		ttl  time.Duration
	}{
		{"500 characters", strings.Repeat("k", 500), time.Second},
		{"500 emoji", strings.Repeat("🔒", 500), time.Second}, // 2,000 bytes
		{"any Unicode", "задача/日次/ü ", time.Second},
		{"1ms", "k", time.Millisecond},
		{"30 days", "long", 30 * 24 * time.Hour}, // more ms than 32 bits hold
	} {
		t.Run(c.name, func(t *testing.T) {
			lk, err := locks.Acquire(context.Background(), c.key, core.WithTTL(c.ttl))
			if err != nil {
				t.Fatal(err)
			}
			defer lk.Release(context.Background())
			infos := live(t, store)
			if len(infos) != 1 || infos[0].Key != c.key || infos[0].ExpiresIn != c.ttl {
				t.Fatalf("store holds %+v", infos)
			}
			if err := core.ValidateKey(c.key); err != nil {
				t.Fatal(err)
			}
			if err := core.ValidateTTL(c.ttl); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestNewBadInputs(t *testing.T) {
	for _, c := range []struct {
		name  string
		store core.LockStore
		opts  []core.Option
		want  error
	}{
		{"nil store", nil, nil, core.ErrInvalidArgument},
		{"default ttl 0", core.NewMemoryStore(), []core.Option{core.WithDefaultTTL(0)}, core.ErrInvalidTTL},
		{"default ttl 1500µs", core.NewMemoryStore(), []core.Option{core.WithDefaultTTL(1500 * time.Microsecond)}, core.ErrInvalidTTL},
		{"negative default ttl", core.NewMemoryStore(), []core.Option{core.WithDefaultTTL(-time.Minute)}, core.ErrInvalidTTL},
	} {
		t.Run(c.name, func(t *testing.T) {
			var (
				l   *core.Locks
				err error
			)
			noPanic(t, "New", func() { l, err = core.New(c.store, append(c.opts, core.WithLogger(discard))...) })
			if !errors.Is(err, c.want) || l != nil {
				t.Fatalf("New: %v, %v; want %v", l, err, c.want)
			}
		})
	}
	// A nil clock or logger falls back to the default.
	noPanic(t, "New", func() {
		l, err := core.New(core.NewMemoryStore(), core.WithClock(nil), core.WithLogger(discard))
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}

func TestValidate(t *testing.T) {
	for _, key := range []string{"", strings.Repeat("é", core.MaxKeyLength+1), "\xc3", "a\x00"} {
		if err := core.ValidateKey(key); !errors.Is(err, core.ErrInvalidKey) {
			t.Errorf("ValidateKey(%q) = %v", key, err)
		}
	}
	for _, key := range []string{"a", strings.Repeat("é", core.MaxKeyLength), "a b", "A"} {
		if err := core.ValidateKey(key); err != nil {
			t.Errorf("ValidateKey(%q) = %v", key, err)
		}
	}
	for _, ttl := range []time.Duration{0, -time.Millisecond, time.Microsecond, 1500 * time.Microsecond, time.Second + time.Nanosecond} {
		err := core.ValidateTTL(ttl)
		if !errors.Is(err, core.ErrInvalidTTL) {
			t.Errorf("ValidateTTL(%v) = %v", ttl, err)
		}
		if err != nil && !strings.Contains(err.Error(), fmt.Sprint(ttl)) {
			t.Errorf("ValidateTTL(%v) = %v: does not say which ttl", ttl, err)
		}
	}
	for _, ttl := range []time.Duration{time.Millisecond, 1501 * time.Millisecond, time.Hour, 60 * 24 * time.Hour} {
		if err := core.ValidateTTL(ttl); err != nil {
			t.Errorf("ValidateTTL(%v) = %v", ttl, err)
		}
	}
}

// TestBadHandles walks core's constructors and entry points with what they
// cannot use: each must answer an error matching ErrInvalidArgument, and
// none may panic or reach the store.
func TestBadHandles(t *testing.T) {
	clock := core.NewManualClock(t0)
	store := core.NewMemoryStore(core.WithMemoryClock(clock))
	spy := newSpy(store, clock)
	locks := coretest.NewLocks(t, spy, core.WithClock(clock))
	job, err := locks.Job(func(context.Context) error { return nil }, core.WithJobKey("j"), core.OnOneInstance())
	if err != nil {
		t.Fatal(err)
	}
	election, err := locks.Elect("e", core.Campaign{OnAcquired: func(*core.Lock) error { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	defer election.Stop(context.Background())
	//nolint:staticcheck // a nil context is what these cells pass
	var nilCtx context.Context
	var nilLock *core.Lock
	fn := func(context.Context) error { return nil }
	calls := coretest.BadHandles{
		"New(nil)":             func() error { _, err := core.New(nil); return err },
		"New(typed nil)":       func() error { _, err := core.New((*core.MemoryStore)(nil)); return err },
		"New(invalid store)":   func() error { _, err := core.New(invalidStore{store}); return err },
		"New(nil option)":      func() error { _, err := core.New(store, nil); return err },
		"Acquire(nil ctx)":     func() error { _, err := locks.Acquire(nilCtx, "k"); return err },
		"Acquire(nil option)":  func() error { _, err := locks.Acquire(context.Background(), "k", nil); return err },
		"WithLock(nil ctx)":    func() error { return locks.WithLock(nilCtx, "k", fn) },
		"WithLock(nil option)": func() error { return locks.WithLock(context.Background(), "k", fn, nil) },
		"Job(nil option)": func() error {
			_, err := locks.Job(fn, core.WithJobKey("j2"), core.OnOneInstance(), nil)
			return err
		},
		"Job.Run(nil ctx)":       func() error { return job.Run(nilCtx) },
		"Election.Stop(nil ctx)": func() error { return election.Stop(nilCtx) },
		"Close(nil ctx)":         func() error { return locks.Close(nilCtx) },
		"(*Lock)(nil).Release":   func() error { return nilLock.Release(context.Background()) },
		"(*Lock)(nil).HandBack":  func() error { return nilLock.HandBack(context.Background(), time.Second) },
		"Lock.Release(nil ctx)": func() error {
			lk, err := locks.Acquire(context.Background(), "held")
			if err != nil {
				return err
			}
			defer lk.Release(context.Background())
			return lk.Release(nilCtx)
		},
	}
	maps.Copy(calls, coretest.StoreBadHandles("MemoryStore", store, nil))
	before := spy.count("acquire")
	coretest.CheckBadHandles(t, calls)
	if n := spy.count("acquire") - before; n != 1 { // the one lock Lock.Release(nil ctx) takes
		t.Errorf("bad handles reached the store: %d acquires, want 1", n)
	}
	if nilLock.Held() {
		t.Error("a nil lock is held")
	}
}

// invalidStore says, through core.Validator, that it cannot be used.
type invalidStore struct{ core.LockStore }

func (invalidStore) Valid() error { return errors.New("made without its constructor") }
