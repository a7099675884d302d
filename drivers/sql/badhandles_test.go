package sqlstore

import (
	"context"
	"database/sql"
	"maps"
	"testing"

	"github.com/leasehold/leasehold/core/coretest"
)

// TestBadHandles walks the engine's constructors and entry points with
// typed nil handles, nil options, nil contexts and zero-value stores.
func TestBadHandles(t *testing.T) {
	s, err := NewWithExecutor(&fakeExec{}, Postgres)
	if err != nil {
		t.Fatal(err)
	}
	//nolint:staticcheck // a nil context is what these cells pass
	var nilCtx context.Context
	calls := coretest.BadHandles{
		"New(typed nil *sql.DB)":            func() error { _, err := New((*sql.DB)(nil), Postgres); return err },
		"NewFromQuerier(typed nil *sql.DB)": func() error { _, err := NewFromQuerier((*sql.DB)(nil), Postgres); return err },
		"NewFromQuerier(typed nil *sql.Conn)": func() error {
			_, err := NewFromQuerier((*sql.Conn)(nil), Postgres)
			return err
		},
		"NewFromQuerier(typed nil *sql.Tx)": func() error { _, err := NewFromQuerier((*sql.Tx)(nil), Postgres); return err },
		"NewWithExecutor(typed nil)":        func() error { _, err := NewWithExecutor((*fakeExec)(nil), Postgres); return err },
		"New(nil option)":                   func() error { _, err := New(new(sql.DB), Postgres, nil); return err },
		"NewWithExecutor(nil option)": func() error {
			_, err := NewWithExecutor(&fakeExec{}, Postgres, WithTable("t"), nil)
			return err
		},
		"Driver.New(nil option)": func() error {
			_, err := Driver{Name: "xstore"}.New(&fakeExec{}, Postgres, nil)
			return err
		},
		"Migrate(nil ctx)":     func() error { return s.Migrate(nilCtx) },
		"ResetTokens(nil ctx)": func() error { return s.ResetTokens(nilCtx) },
	}
	maps.Copy(calls, coretest.StoreBadHandles("Store", s, &Store{}))
	coretest.CheckBadHandles(t, calls)
}

// TestEmptyTableIsTheDefault: WithTable("") is the default table, and
// Table says so.
func TestEmptyTableIsTheDefault(t *testing.T) {
	s, err := NewWithExecutor(&fakeExec{}, Postgres, WithTable(""))
	if err != nil {
		t.Fatal(err)
	}
	if s.Table() != DefaultTable {
		t.Fatalf("Table() = %q, want %q", s.Table(), DefaultTable)
	}
}
