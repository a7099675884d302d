package core_test

import (
	"context"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/leasehold/leasehold/core"
)

// BenchmarkAcquireRelease measures what Locks adds to a store's own acquire
// and release (owner id, validation, token check, context, scheduling), next
// to the raw store calls in the same run. Keys rotate so that the token map
// and the heap see realistic sizes.
func BenchmarkAcquireRelease(b *testing.B) {
	ctx := context.Background()
	keys := make([]string, 1024)
	for i := range keys {
		keys[i] = "bench:" + strconv.Itoa(i)
	}
	b.Run("locks", func(b *testing.B) {
		l, err := core.New(core.NewMemoryStore(), core.WithLogger(slog.New(slog.DiscardHandler)))
		if err != nil {
			b.Fatal(err)
		}
		defer l.Close(ctx)
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			lk, err := l.Acquire(ctx, keys[i%len(keys)])
			if err != nil {
				b.Fatal(err)
			}
			if err := lk.Release(ctx); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
	b.Run("raw", func(b *testing.B) {
		store := core.NewMemoryStore()
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			key := keys[i%len(keys)]
			if _, ok, err := store.Acquire(ctx, key, "owner", 30*time.Second); !ok || err != nil {
				b.Fatal(ok, err)
			}
			if ok, err := store.Release(ctx, key, "owner"); !ok || err != nil {
				b.Fatal(ok, err)
			}
			i++
		}
	})
}
