package core

import (
	"testing"
	"time"
)

// TestBackoff: delays have full jitter in [cur/2, cur], grow from 25ms and
// never exceed the cap, min(1s, ttl/3), from the first one on.
func TestBackoff(t *testing.T) {
	for _, c := range []struct {
		ttl, cap time.Duration
	}{
		{30 * time.Second, time.Second},
		{time.Second, time.Second / 3},
		{30 * time.Millisecond, 10 * time.Millisecond},
		{time.Millisecond, time.Millisecond},
	} {
		b := newBackoff(c.ttl)
		want := min(25*time.Millisecond, c.cap)
		var minSeen, maxSeen time.Duration = time.Hour, 0
		for i := range 200 {
			d := b.next()
			if d < want/2 || d > want {
				t.Fatalf("ttl %v: delay %d is %v, want within [%v, %v]", c.ttl, i, d, want/2, want)
			}
			if i > 20 {
				minSeen, maxSeen = min(minSeen, d), max(maxSeen, d)
			}
			want = min(want*2, c.cap)
		}
		// Jitter: the capped delays are not all alike.
		if maxSeen-minSeen < c.cap/4 {
			t.Fatalf("ttl %v: capped delays all within [%v, %v]: no jitter", c.ttl, minSeen, maxSeen)
		}
	}
}

func TestRetryDelay(t *testing.T) {
	for ttl, want := range map[time.Duration]time.Duration{
		30 * time.Second:      3 * time.Second,
		time.Second:           100 * time.Millisecond,
		5 * time.Millisecond:  time.Millisecond,
		time.Millisecond:      time.Millisecond,
		14 * 24 * time.Hour:   14 * 24 * time.Hour / 10,
		10 * time.Millisecond: time.Millisecond,
	} {
		if got := retryDelay(ttl); got != want {
			t.Errorf("retryDelay(%v) = %v, want %v", ttl, got, want)
		}
	}
}
