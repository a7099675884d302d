package core_test

import (
	"testing"
	"time"

	"github.com/leasehold/leasehold/core"
)

// coarseStore declares a precision of a fixed amount, or a negative one.
type coarseStore struct {
	core.LockStore
	late time.Duration
}

func (s coarseStore) ExpiryPrecision(time.Duration) time.Duration { return s.late }

func TestExpiryLateness(t *testing.T) {
	mem := core.NewMemoryStore()
	for _, c := range []struct {
		name  string
		store core.LockStore
		want  time.Duration
	}{
		{"no declaration", mem, 0},
		{"declared", coarseStore{mem, 1500 * time.Millisecond}, 1500 * time.Millisecond},
		{"negative counts as zero", coarseStore{mem, -time.Second}, 0},
	} {
		if got := core.ExpiryLateness(c.store, 3*time.Second); got != c.want {
			t.Errorf("%s: ExpiryLateness = %v, want %v", c.name, got, c.want)
		}
	}
}
