package integration_test

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/leasehold/leasehold/core"
	gormstore "github.com/leasehold/leasehold/drivers/gorm"
	sqlstore "github.com/leasehold/leasehold/drivers/sql"
)

// TestNewDetectsTheDialect: the dialect comes from the dialector's name,
// and the store names itself gormstore.
func TestNewDetectsTheDialect(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		s := newStore(t, open(t, b, nil), sqlstore.WithTable("job_locks"))
		if s.Dialect().String() != b.dialect.String() || s.Table() != "job_locks" {
			t.Errorf("dialect %v, table %q; want %v, job_locks", s.Dialect(), s.Table(), b.dialect)
		}
		if want := "gormstore (" + b.dialect.String() + ", table job_locks)"; s.String() != want {
			t.Errorf("String() = %q, want %q", s.String(), want)
		}
	})
}

// TestErrorsThroughGORM: an operation on a database without the table
// fails, through GORM's error, with one that matches ErrNotMigrated and
// names the store, with GORM's error translation on or off.
func TestErrorsThroughGORM(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		dsn := b.dsn(t)
		for _, translate := range []bool{false, true} {
			s := newStore(t, openDSN(t, b, dsn, &gorm.Config{Logger: quiet().Logger, TranslateError: translate}))
			_, _, err := s.Acquire(ctxT(t), "k", "o", time.Minute)
			if !errors.Is(err, sqlstore.ErrNotMigrated) || !strings.HasPrefix(err.Error(), "gormstore: ") {
				t.Fatalf("TranslateError %v: Acquire before Migrate = %v; want an error matching ErrNotMigrated", translate, err)
			}
		}
	})
}

// TestConcurrentMigrate: instances starting at once on a fresh database
// all migrate it (on PostgreSQL, one after the other behind the engine's
// advisory lock, in GORM's transaction).
func TestConcurrentMigrate(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		db := open(t, b, nil)
		var wg sync.WaitGroup
		ctx := ctxT(t)
		for range 8 {
			s := newStore(t, db)
			wg.Go(func() {
				if err := s.Migrate(ctx); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		wantAcquire(t, newStore(t, db), "migrated", "o", true)
	})
}

// TestNewRefusesTransactions: a *gorm.DB inside a transaction, however it
// got there, is refused with ErrTransaction and a reason.
func TestNewRefusesTransactions(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		db := open(t, b, nil)
		refused := func(how string, tx *gorm.DB) {
			t.Helper()
			s, err := gormstore.New(tx)
			if s != nil || !errors.Is(err, sqlstore.ErrTransaction) || !errors.Is(err, core.ErrInvalidArgument) {
				t.Fatalf("New(%s) = %v, %v; want an error matching sqlstore.ErrTransaction and core.ErrInvalidArgument", how, s, err)
			}
			for _, why := range []string{"invisible to other instances", "rollback", "row locks"} {
				if !strings.Contains(err.Error(), why) {
					t.Errorf("New(%s): %q does not say why (%q)", how, err, why)
				}
			}
		}

		tx := db.Begin()
		if tx.Error != nil {
			t.Fatal(tx.Error)
		}
		refused("db.Begin()", tx)
		refused("a session of db.Begin()", tx.Session(&gorm.Session{NewDB: true}))
		tx.Rollback()

		prepared := db.Session(&gorm.Session{PrepareStmt: true}).Begin()
		refused("db.Begin() with prepared statements", prepared)
		prepared.Rollback()

		err := db.Transaction(func(tx *gorm.DB) error {
			refused("the tx of db.Transaction", tx)
			return tx.Transaction(func(nested *gorm.DB) error {
				refused("the tx of a nested Transaction", nested)
				return nil
			})
		})
		if err != nil {
			t.Fatal(err)
		}

		// The database handle itself, and sessions of it, are fine.
		for how, ok := range map[string]*gorm.DB{
			"db":                           db,
			"db.WithContext(ctx)":          db.WithContext(ctxT(t)),
			"a prepared-statement session": db.Session(&gorm.Session{PrepareStmt: true}),
		} {
			s, err := gormstore.New(ok)
			if err != nil {
				t.Fatalf("New(%s): %v", how, err)
			}
			if err := s.Migrate(ctxT(t)); err != nil {
				t.Fatalf("New(%s): Migrate: %v", how, err)
			}
			wantAcquire(t, s, "new:"+how, "o", true)
			wantRenew(t, s, "new:"+how, "o", true)
			wantRelease(t, s, "new:"+how, "o", true)
		}
	})
}

// renamed is a dialector of a database leasehold has no dialect for.
type renamed struct {
	gorm.Dialector
	name string
}

func (r renamed) Name() string { return r.name }

// TestNewRefusesUnsupportedDialectors names the dialector and the
// supported ones.
func TestNewRefusesUnsupportedDialectors(t *testing.T) {
	b := backends[len(backends)-1] // pure-Go SQLite, under another name
	for _, name := range []string{"sqlserver", "clickhouse", ""} {
		db, err := gorm.Open(renamed{b.open(b.dsn(t)), name}, quiet())
		if err != nil {
			t.Fatal(err)
		}
		s, err := gormstore.New(db)
		var ude *sqlstore.UnsupportedDialectError
		if s != nil || !errors.As(err, &ude) || ude.Name != name || !errors.Is(err, core.ErrInvalidArgument) {
			t.Fatalf("New(%q dialector) = %v, %v; want an *sqlstore.UnsupportedDialectError for %q", name, s, err, name)
		}
		for _, want := range []string{"renamed", "postgres", "mysql", "sqlite"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("New(%q dialector): %q does not name %q", name, err, want)
			}
		}
		if pool, err := db.DB(); err == nil {
			pool.Close()
		}
	}
}

// TestNewRefusesUnusableHandles: nil, an unopened *gorm.DB, a DryRun
// session and a chain that carries an error are invalid arguments, not
// panics and not a store that fails later.
func TestNewRefusesUnusableHandles(t *testing.T) {
	b := backends[len(backends)-1]
	db := open(t, b, nil)
	failed := db.Session(&gorm.Session{})
	failed.AddError(errors.New("an earlier failure"))
	for how, bad := range map[string]*gorm.DB{
		"nil":              nil,
		"&gorm.DB{}":       {},
		"a DryRun session": db.Session(&gorm.Session{DryRun: true}),
		"a failed chain":   failed,
	} {
		s, err := gormstore.New(bad)
		if s != nil || !errors.Is(err, core.ErrInvalidArgument) {
			t.Errorf("New(%s) = %v, %v; want an error matching core.ErrInvalidArgument", how, s, err)
		}
	}
}
