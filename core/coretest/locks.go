package coretest

import (
	"context"
	"log/slog"
	"testing"

	"github.com/leasehold/leasehold/core"
)

// NewLocks returns a [core.Locks] on store that logs nowhere, unless opts
// give it a logger (opts are applied after that default), and that is
// closed when the test ends. It fails the test if [core.New] fails.
//
// The closing context is already done, so Close waits for nothing: runs
// still in progress are cancelled and every lock is released at once.
func NewLocks(t testing.TB, store core.LockStore, opts ...core.Option) *core.Locks {
	t.Helper()
	all := append([]core.Option{core.WithLogger(slog.New(slog.DiscardHandler))}, opts...)
	l, err := core.New(store, all...)
	if err != nil {
		t.Fatalf("core.New: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_ = l.Close(ctx)
	})
	return l
}
