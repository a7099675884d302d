package entstore_test

import (
	"context"
	"maps"
	"testing"

	"entgo.io/ent/dialect"
	entsql "entgo.io/ent/dialect/sql"

	"github.com/leasehold/leasehold/core/coretest"
	entstore "github.com/leasehold/leasehold/drivers/ent"
)

// TestBadHandles walks New, NewFromClient and the store's entry points
// with typed nil handles, nil options, nil contexts and the zero value.
func TestBadHandles(t *testing.T) {
	s, err := entstore.New(fakeDriver{dialect: dialect.Postgres})
	if err != nil {
		t.Fatal(err)
	}
	calls := coretest.BadHandles{
		"New(nil)":                   func() error { _, err := entstore.New(nil); return err },
		"New(typed nil *sql.Driver)": func() error { _, err := entstore.New((*entsql.Driver)(nil)); return err },
		"New(typed nil *DebugDriver)": func() error {
			_, err := entstore.New((*dialect.DebugDriver)(nil))
			return err
		},
		"New(Debug of typed nil)": func() error {
			_, err := entstore.New(dialect.Debug((*entsql.Driver)(nil)))
			return err
		},
		"New(nil option)": func() error { _, err := entstore.New(fakeDriver{dialect: dialect.Postgres}, nil); return err },
		"NewFromClient(typed nil)": func() error {
			_, err := entstore.NewFromClient((*fakeClient)(nil), dialect.Postgres)
			return err
		},
		"NewFromClient(nil option)": func() error {
			_, err := entstore.NewFromClient(fakeClient{}, dialect.Postgres, nil)
			return err
		},
		"Migrate(nil ctx)": func() error { return s.Migrate(nilContext()) },
	}
	maps.Copy(calls, coretest.StoreBadHandles("Store", s, &entstore.Store{}))
	coretest.CheckBadHandles(t, calls)
}

// nilContext is a nil context.Context, which the cells pass on purpose.
func nilContext() context.Context { return nil }
