package bunstore

import (
	"context"
	"maps"
	"testing"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
	"github.com/uptrace/bun/schema"

	"github.com/leasehold/leasehold/core/coretest"
)

// TestBadHandles walks New and the store's entry points with typed nil
// handles, bun handles that bun did not make, nil options, nil contexts
// and the zero value.
func TestBadHandles(t *testing.T) {
	s, err := New(namedDB{name: dialect.PG})
	if err != nil {
		t.Fatal(err)
	}
	calls := coretest.BadHandles{
		"New(nil)":               func() error { _, err := New(nil); return err },
		"New(typed nil *bun.DB)": func() error { _, err := New((*bun.DB)(nil)); return err },
		"New(&bun.DB{})":         func() error { _, err := New(&bun.DB{}); return err },
		"New(bun.Conn{})":        func() error { _, err := New(bun.Conn{}); return err },
		"New(&bun.Conn{})":       func() error { _, err := New(&bun.Conn{}); return err },
		"New(no dialect)":        func() error { _, err := New(noDialect{}); return err },
		"New(nil option)":        func() error { _, err := New(namedDB{name: dialect.PG}, nil); return err },
		"Migrate(nil ctx)":       func() error { return s.Migrate(nilContext()) },
	}
	maps.Copy(calls, coretest.StoreBadHandles("Store", s, &Store{}))
	coretest.CheckBadHandles(t, calls)
}

// nilContext is a nil context.Context, which the cells pass on purpose.
func nilContext() context.Context { return nil }

// noDialect is a bun.IDB without a dialect.
type noDialect struct{ bun.IDB }

func (noDialect) Dialect() schema.Dialect { return nil }
