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

// otherStore is a LockStore that is not the memory store, over one.
type otherStore struct{ core.LockStore }

// TestNewGuardsTheMemoryStore checks New's answer on each value of
// LEASEHOLD_INSTANCES, on the memory store, with and without
// AllowMemoryStore, and on another store.
func TestNewGuardsTheMemoryStore(t *testing.T) {
	for _, tc := range []struct {
		name  string
		env   string
		store func() core.LockStore
		opts  []core.Option
		want  error // nil: New succeeds
	}{
		{"unset", "", mem, nil, nil},
		{"one instance", "1", mem, nil, nil},
		{"three instances", "3", mem, nil, core.ErrMemoryStoreRefused},
		{"three, with spaces", " 3 ", mem, nil, core.ErrMemoryStoreRefused},
		{"three instances, allowed", "3", mem, []core.Option{core.AllowMemoryStore()}, nil},
		{"three instances, another store", "3", func() core.LockStore { return otherStore{core.NewMemoryStore()} }, nil, nil},
		{"not a number", "three", mem, nil, core.ErrInvalidArgument},
		{"zero", "0", mem, nil, core.ErrInvalidArgument},
		{"not a number, allowed", "three", mem, []core.Option{core.AllowMemoryStore()}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(core.EnvInstances, tc.env) // "" reads as unset
			logs := &coretest.LogBuffer{}
			l, err := core.New(tc.store(), append([]core.Option{core.WithLogger(logs.Logger())}, tc.opts...)...)
			if tc.want == nil {
				if err != nil {
					t.Fatalf("New: %v", err)
				}
				if err := l.Close(context.Background()); err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, tc.want) || l != nil {
				t.Fatalf("New = %v, %v; want nil and an error matching %v", l, err, tc.want)
			}
			if !strings.Contains(err.Error(), core.EnvInstances+"=") {
				t.Errorf("the error does not name %s: %v", core.EnvInstances, err)
			}
			if errors.Is(tc.want, core.ErrMemoryStoreRefused) && !strings.Contains(err.Error(), "AllowMemoryStore") {
				t.Errorf("the error does not name the way out: %v", err)
			}
		})
	}
}

func mem() core.LockStore { return core.NewMemoryStore() }

// TestAllowedMemoryStoreServesSeveralInstances is what AllowMemoryStore is
// for: instances in one process that share one MemoryStore exclude each
// other even where the environment says several instances run.
func TestAllowedMemoryStoreServesSeveralInstances(t *testing.T) {
	t.Setenv(core.EnvInstances, "2")
	store := core.NewMemoryStore()
	a := coretest.NewLocks(t, store, core.AllowMemoryStore())
	b := coretest.NewLocks(t, store, core.AllowMemoryStore())
	lk := mustAcquire(t, a, "shared")
	if _, err := b.Acquire(context.Background(), "shared", core.WithTTL(time.Second)); !errors.Is(err, core.ErrNotAcquired) {
		t.Fatalf("the second instance's Acquire = %v, want ErrNotAcquired while the first holds the key", err)
	}
	if err := lk.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
}
