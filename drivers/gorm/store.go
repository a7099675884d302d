package gormstore

import (
	"fmt"

	"gorm.io/gorm"

	"github.com/leasehold/leasehold/core"
	sqlstore "github.com/leasehold/leasehold/drivers/sql"
)

// Store is a [sqlstore.Store] whose statements run through GORM: a
// [core.LockStore] and [core.Lister], with every method of the SQL engine
// (Migrate, Schema, ResetTokens). It is safe for concurrent use, and shares
// its table with any other store of leasehold over the same database.
type Store struct {
	*sqlstore.Store
}

var (
	_ core.LockStore = (*Store)(nil)
	_ core.Lister    = (*Store)(nil)
)

// driver is how the engine knows this package: GORM turns ? into its
// dialector's placeholders ($n on PostgreSQL).
var driver = sqlstore.Driver{Name: "gormstore", Placeholder: sqlstore.Question}

// New returns a Store over db, the application's *gorm.DB (what gorm.Open
// returned, or a session of it such as db.Clauses(dbresolver.Write)). The
// dialect comes from db's dialector: "postgres", "mysql" (MariaDB too) or
// "sqlite"; another is an error matching [*sqlstore.UnsupportedDialectError].
// opts are the engine's, such as [sqlstore.WithTable]; the placeholder
// style is always GORM's.
//
// A db inside a transaction (from db.Begin, or the tx of db.Transaction) is
// refused with an error matching [sqlstore.ErrTransaction], and a DryRun
// session, which runs nothing, with one matching [core.ErrInvalidArgument].
//
// New does not touch the database: call [Store.Migrate] (or run
// [Store.Schema] in your migrations) before the first lock.
func New(db *gorm.DB, opts ...sqlstore.Option) (*Store, error) {
	if db == nil || db.Config == nil || db.Statement == nil || db.Dialector == nil {
		return nil, fmt.Errorf("gormstore: a nil or unopened *gorm.DB: pass the one gorm.Open returned: %w", core.ErrInvalidArgument)
	}
	if err := usable(db); err != nil {
		return nil, fmt.Errorf("gormstore: %w", err)
	}
	d, err := sqlstore.DialectNamed(db.Dialector.Name())
	if err != nil {
		return nil, fmt.Errorf("gormstore: GORM dialector %T: %w", db.Dialector, err)
	}
	s, err := driver.New(newExecutor(db), d, opts...)
	if err != nil {
		return nil, err
	}
	return &Store{Store: s}, nil
}

// usable refuses a *gorm.DB that would not run the store's statements as
// autocommitted statements of its own.
func usable(db *gorm.DB) error {
	if db.Error != nil {
		return fmt.Errorf("the *gorm.DB carries an error from an earlier call (%v): %w", db.Error, core.ErrInvalidArgument)
	}
	if db.DryRun {
		return fmt.Errorf("the *gorm.DB is a DryRun session, which builds statements without running them: %w", core.ErrInvalidArgument)
	}
	// GORM's transactions (db.Begin, db.Transaction, and their prepared
	// statement mode) keep a TxCommitter as the statement's pool; so does
	// dbresolver, which never reroutes inside one.
	if _, ok := db.Statement.ConnPool.(gorm.TxCommitter); ok {
		return fmt.Errorf("a *gorm.DB from db.Begin or db.Transaction (a lock taken there is invisible to other instances until it commits, vanishes at rollback, and its renewals would wait behind the transaction's own row locks): %w", sqlstore.ErrTransaction)
	}
	return nil
}
