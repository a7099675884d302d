package coretest

import (
	"errors"
	"fmt"
	"sync"
)

// ErrStaleToken is matched by the error of a [FencedResource.Write] whose
// fencing token is lower than one the resource has already accepted.
var ErrStaleToken = errors.New("write refused: stale fencing token")

// FencedResource stands for what a lock protects, such as a database row
// with a token column written by a conditional update: it keeps the highest
// fencing token it has accepted and refuses a write with a lower one. A
// holder that paused past its lease, and whose lock another instance has
// since taken with a greater token, then cannot overwrite the new holder's
// work. It is safe for concurrent use; the zero value has seen no token.
type FencedResource struct {
	mu      sync.Mutex
	highest int64
	value   string
}

// Write stores value if token is at least the highest token accepted so
// far, and fails with an error matching [ErrStaleToken] if it is lower.
func (r *FencedResource) Write(token int64, value string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if token < r.highest {
		return fmt.Errorf("%w: %d < %d", ErrStaleToken, token, r.highest)
	}
	r.highest, r.value = token, value
	return nil
}

// Read returns the highest token accepted so far and the value written
// with it.
func (r *FencedResource) Read() (token int64, value string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.highest, r.value
}
