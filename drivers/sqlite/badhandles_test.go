package sqlitestore

import (
	"context"
	"database/sql"
	"maps"
	"testing"

	"github.com/leasehold/leasehold/core/coretest"
)

// TestBadHandles walks Open, New and the store's entry points with typed
// nil handles, nil options, nil contexts and the zero value.
func TestBadHandles(t *testing.T) {
	s := open(t, ":memory:")
	calls := coretest.BadHandles{
		"New(nil)":         func() error { _, err := New(nil); return err },
		"New(typed nil)":   func() error { _, err := New((*sql.DB)(nil)); return err },
		"New(nil option)":  func() error { _, err := New(s.DB(), nil); return err },
		"Open(nil option)": func() error { _, err := Open(":memory:", nil); return err },
		"Migrate(nil ctx)": func() error { return s.Migrate(nilContext()) },
	}
	maps.Copy(calls, coretest.StoreBadHandles("Store", s, &Store{}))
	coretest.CheckBadHandles(t, calls)
}

// nilContext is a nil context.Context, which the cells pass on purpose.
func nilContext() context.Context { return nil }
