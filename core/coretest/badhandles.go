package coretest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/leasehold/leasehold/core"
)

// BadHandles is a bad-handle table: calls, by name, each given something
// it cannot use (a typed nil handle, a store's zero value, a nil option,
// a nil context, a nil lock), which must fail with an error matching
// [core.ErrInvalidArgument], and must not panic.
type BadHandles map[string]func() error

// CheckBadHandles runs each call of calls as a subtest of t, in the order
// of their names, and fails the subtest if the call panics or returns an
// error that does not match [core.ErrInvalidArgument]. Every driver walks
// its constructors and entry points with it.
func CheckBadHandles(t *testing.T, calls BadHandles) {
	t.Helper()
	for _, name := range slices.Sorted(maps.Keys(calls)) {
		t.Run(name, func(t *testing.T) {
			err, panicked := callSafely(calls[name])
			switch {
			case panicked != nil:
				t.Fatalf("panicked: %v", panicked)
			case !errors.Is(err, core.ErrInvalidArgument):
				t.Fatalf("error %v, want one matching core.ErrInvalidArgument", err)
			}
		})
	}
}

func callSafely(call func() error) (err error, panicked any) {
	defer func() { panicked = recover() }()
	return call(), nil
}

// StoreBadHandles returns the cells that every store shares, named after
// name: each of the store's methods called with a nil context (the
// [core.Lister] and [core.BatchRenewer] ones when it has them), and, when
// zero is not nil, [core.New] on zero, the store's zero value or one made
// without its constructor.
func StoreBadHandles(name string, store, zero core.LockStore) BadHandles {
	//nolint:staticcheck // a nil context is what these cells pass
	var nilCtx context.Context
	calls := BadHandles{
		name + ".Acquire(nil ctx)": func() error { _, _, err := store.Acquire(nilCtx, "k", "o", time.Second); return err },
		name + ".Renew(nil ctx)":   func() error { _, err := store.Renew(nilCtx, "k", "o", time.Second); return err },
		name + ".Release(nil ctx)": func() error { _, err := store.Release(nilCtx, "k", "o"); return err },
	}
	if l, ok := store.(core.Lister); ok {
		calls[name+".List(nil ctx)"] = func() error { _, err := l.List(nilCtx, ""); return err }
	}
	if b, ok := store.(core.BatchRenewer); ok {
		calls[name+".RenewBatch(nil ctx)"] = func() error {
			_, err := b.RenewBatch(nilCtx, []core.Lease{{Key: "k", Owner: "o", TTL: time.Second}})
			return err
		}
	}
	if zero != nil {
		calls[fmt.Sprintf("%s: core.New(%T zero value)", name, zero)] = func() error {
			l, err := core.New(zero)
			if l != nil {
				l.Close(context.Background())
			}
			return err
		}
	}
	return calls
}
