package bunstore

import (
	"fmt"
	"reflect"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"

	"github.com/leasehold/leasehold/core"
	sqlstore "github.com/leasehold/leasehold/drivers/sql"
)

// pkg prefixes the store's errors and its String.
const pkg = "bunstore"

// Store is a [core.LockStore] and [core.Lister] over a bun handle. It is
// the SQL engine's [sqlstore.Store], so it has all of its methods:
// Acquire, Renew, Release, List, Migrate, Schema, Table, Dialect and, for
// tests, ResetTokens. Its methods are safe for concurrent use.
type Store struct {
	*sqlstore.Store
}

// driver is how the engine knows this package: bun formats '?'.
var driver = sqlstore.Driver{Name: pkg, Placeholder: sqlstore.Question}

// New returns a Store that runs its statements through db: a *bun.DB, or a
// bun.Conn (whose one connection then carries every lock). The dialect is
// db's: PostgreSQL ("pg"), MySQL or MariaDB ("mysql") or SQLite ("sqlite");
// another one is an [*sqlstore.UnsupportedDialectError]. A bun.Tx is
// refused with an error matching [sqlstore.ErrTransaction]: a lock taken
// inside an uncommitted transaction excludes nobody. Of the options,
// [sqlstore.WithTable] names the table; the placeholder style and the
// name are this package's.
//
// New does not touch the database: call [sqlstore.Store.Migrate] (or
// register [RegisterMigration]) before the first lock.
func New(db bun.IDB, opts ...sqlstore.Option) (*Store, error) {
	if err := core.ValidateHandle("bun.IDB", db); err != nil {
		return nil, fmt.Errorf("%s: %w", pkg, err)
	}
	switch db := db.(type) {
	case *bun.DB, *bun.Conn, bun.Conn:
		if unopened(db) {
			return nil, fmt.Errorf("%s: %T not made by bun (bun.NewDB, db.Conn): %w", pkg, db, core.ErrInvalidArgument)
		}
	case bun.Tx, *bun.Tx:
		return nil, fmt.Errorf("%s: %T: %w", pkg, db, sqlstore.ErrTransaction)
	}
	dl := db.Dialect()
	if dl == nil {
		return nil, fmt.Errorf("%s: %T has no dialect: %w", pkg, db, core.ErrInvalidArgument)
	}
	dn := dl.Name()
	d, err := sqlstore.DialectNamed(dn.String())
	if err != nil {
		return nil, fmt.Errorf("%s: bun dialect: %w", pkg, err)
	}
	e := transactor{executor: executor{conn: db, literal: literalFor(dn)}, db: db}
	s, err := driver.New(e, d, opts...)
	if err != nil {
		return nil, err
	}
	return &Store{s}, nil
}

// unopened reports a *bun.DB or bun.Conn that bun did not make (a zero
// value), whose methods would dereference nil: bun sets every pointer
// field of both. It keeps them unexported (a *bun.DB's state, a Conn's
// *bun.DB), so they are looked at by reflection, which reads whether they
// are nil without touching what they point to.
func unopened(db bun.IDB) bool {
	v := reflect.ValueOf(db)
	if v.Kind() == reflect.Pointer {
		v = v.Elem()
	}
	for i := range v.NumField() {
		if f := v.Field(i); f.Kind() == reflect.Pointer && f.IsNil() {
			return true
		}
	}
	return false
}

// literalFor returns how a string argument is handed to bun's formatter on
// dialect n, so that it reads back exactly (see the package documentation),
// or nil where bun's own string literal is exact (SQLite).
func literalFor(n dialect.Name) func(string) any {
	switch n {
	case dialect.PG:
		return func(s string) any { return pgString(s) }
	case dialect.MySQL:
		return func(s string) any { return []byte(s) }
	}
	return nil
}
