package shop

import (
	"context"
	"testing"
	"time"

	"github.com/leasehold/leasehold/core"
)

func TestEveryFiresOnTheWallClocksMultiples(t *testing.T) {
	clock := core.NewManualClock(time.Date(2026, 3, 2, 1, 58, 30, 0, time.UTC))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ticks := make(chan struct{}, 10)
	Every(ctx, clock, 5*time.Minute, 0, func() { ticks <- struct{}{} })

	expect := func(n int) {
		t.Helper()
		for i := range n {
			select {
			case <-ticks:
			case <-time.After(5 * time.Second):
				t.Fatalf("%d ticks, want %d", i, n)
			}
		}
		select {
		case <-ticks:
			t.Fatalf("more than %d ticks", n)
		case <-time.After(10 * time.Millisecond):
		}
	}
	clock.Advance(90*time.Second - time.Millisecond) // 01:59:59.999
	expect(0)
	clock.Advance(time.Millisecond) // 02:00
	expect(1)
	clock.Advance(10 * time.Minute) // 02:05 and 02:10
	expect(2)
	cancel()
	clock.Advance(time.Hour)
	expect(0)
}
