package coretest

import (
	"context"
	"testing"
	"time"

	"github.com/leasehold/leasehold/core"
)

// callTimeout bounds each store call of the helpers below.
const callTimeout = 2 * time.Minute

// WantAcquire calls store.Acquire and fails tb unless the answer is want,
// with a positive token when acquired. It returns the token.
func WantAcquire(tb testing.TB, store core.LockStore, key, owner string, ttl time.Duration, want bool) int64 {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	tok, ok, err := store.Acquire(ctx, key, owner, ttl)
	if err != nil || ok != want || ok && tok <= 0 {
		tb.Fatalf("Acquire(%q, %q) = %d, %v, %v; want %v", key, owner, tok, ok, err, want)
	}
	return tok
}

// WantRenew calls store.Renew and fails tb unless the answer is want.
func WantRenew(tb testing.TB, store core.LockStore, key, owner string, ttl time.Duration, want bool) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	if ok, err := store.Renew(ctx, key, owner, ttl); err != nil || ok != want {
		tb.Fatalf("Renew(%q, %q) = %v, %v; want %v", key, owner, ok, err, want)
	}
}

// WantRelease calls store.Release and fails tb unless the answer is want.
func WantRelease(tb testing.TB, store core.LockStore, key, owner string, want bool) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	if ok, err := store.Release(ctx, key, owner); err != nil || ok != want {
		tb.Fatalf("Release(%q, %q) = %v, %v; want %v", key, owner, ok, err, want)
	}
}
