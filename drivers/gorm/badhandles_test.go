package gormstore_test

import (
	"context"
	"maps"
	"testing"

	"gorm.io/gorm"
	"gorm.io/gorm/utils/tests"

	"github.com/leasehold/leasehold/core/coretest"
	gormstore "github.com/leasehold/leasehold/drivers/gorm"
)

// pgDummy is GORM's dummy dialector under PostgreSQL's name: a *gorm.DB
// that New accepts, and that no cell below reaches.
type pgDummy struct{ tests.DummyDialector }

func (pgDummy) Name() string { return "postgres" }

// TestBadHandles walks New and the store's entry points with typed nil
// and unopened handles, nil options, nil contexts and the zero value.
func TestBadHandles(t *testing.T) {
	db, err := gorm.Open(pgDummy{}, &gorm.Config{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := gormstore.New(db)
	if err != nil {
		t.Fatal(err)
	}
	calls := coretest.BadHandles{
		"New(typed nil)":   func() error { _, err := gormstore.New(nil); return err },
		"New(&gorm.DB{})":  func() error { _, err := gormstore.New(&gorm.DB{}); return err },
		"New(nil option)":  func() error { _, err := gormstore.New(db, nil); return err },
		"Migrate(nil ctx)": func() error { return s.Migrate(nilContext()) },
	}
	maps.Copy(calls, coretest.StoreBadHandles("Store", s, &gormstore.Store{}))
	coretest.CheckBadHandles(t, calls)
}

// nilContext is a nil context.Context, which the cells pass on purpose.
func nilContext() context.Context { return nil }
