package pgxstore_test

import (
	"context"
	"maps"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/leasehold/leasehold/core/coretest"
	pgxstore "github.com/leasehold/leasehold/drivers/pgx"
)

// TestBadHandles walks New and the store's entry points with typed nil
// handles, nil options, nil contexts and the zero value.
func TestBadHandles(t *testing.T) {
	pool, err := pgxpool.New(context.Background(), "postgres://nobody@127.0.0.1:1/none") // never dialled
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	s, err := pgxstore.New(pool)
	if err != nil {
		t.Fatal(err)
	}
	calls := coretest.BadHandles{
		"New(nil)":             func() error { _, err := pgxstore.New(nil); return err },
		"New(typed nil *Pool)": func() error { _, err := pgxstore.New((*pgxpool.Pool)(nil)); return err },
		"New(typed nil *Conn)": func() error { _, err := pgxstore.New((*pgx.Conn)(nil)); return err },
		"New(nil option)":      func() error { _, err := pgxstore.New(pool, nil); return err },
		"Migrate(nil ctx)":     func() error { return s.Migrate(nilContext()) },
	}
	maps.Copy(calls, coretest.StoreBadHandles("Store", s, pgxstore.Store{}))
	coretest.CheckBadHandles(t, calls)
}

// nilContext is a nil context.Context, which the cells pass on purpose.
func nilContext() context.Context { return nil }
