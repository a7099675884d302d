package entstore

import (
	"database/sql"
	"fmt"

	"entgo.io/ent/dialect"
	entsql "entgo.io/ent/dialect/sql"

	"github.com/leasehold/leasehold/core"
	sqlstore "github.com/leasehold/leasehold/drivers/sql"
)

// Store is a [core.LockStore] and [core.Lister] over an ent driver or
// client. It embeds the SQL engine's [sqlstore.Store], so it has all of its
// methods: Acquire, Renew, Release, List, Migrate, ResetTokens, Schema.
// Errors start with "entstore:".
type Store struct {
	*sqlstore.Store
}

var (
	_ core.LockStore = (*Store)(nil)
	_ core.Lister    = (*Store)(nil)
)

// name prefixes the store's errors and String.
const name = "entstore"

// New returns a Store that runs its statements through drv, the driver the
// application's ent client is built from (entsql.Open, entsql.OpenDB, or
// that driver wrapped by [dialect.Debug] or a tracing driver). The dialect
// is drv.Dialect(): "postgres", "mysql" or "sqlite3". Statements use the
// database's own placeholders, as ent's driver passes them to database/sql
// unchanged. opts are the SQL engine's, such as [sqlstore.WithTable].
//
// A transaction driver (a [dialect.Tx], such as the driver of a client from
// tx.Client(), or an ent driver over a *sql.Tx) is refused with an error
// matching [sqlstore.ErrTransaction]: a lock taken inside an uncommitted
// transaction excludes nobody. The MySQL dialect acquires in a transaction
// of its own, begun with drv.Tx; a driver that cannot begin one (an ent
// driver over a *sql.Conn) is refused there.
//
// New does not touch the database: call [sqlstore.Store.Migrate], or add
// [NewSchema]'s tables to the application's ent migrations.
func New(drv dialect.Driver, opts ...sqlstore.Option) (*Store, error) {
	begins, err := checkDriver(drv)
	if err != nil {
		return nil, err
	}
	d, err := sqlstore.DialectNamed(drv.Dialect())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	var e sqlstore.Executor = driverExecutor{drv}
	if begins {
		e = driverTransactor{driverExecutor{drv}, drv}
	}
	return newStore(e, d, opts)
}

// checkDriver refuses a nil or transaction driver, and reports whether drv
// can begin transactions. It looks through [dialect.Debug].
func checkDriver(drv dialect.Driver) (begins bool, err error) {
	for {
		if err := core.ValidateHandle("dialect.Driver", drv); err != nil {
			return false, fmt.Errorf("%s: %w", name, err)
		}
		switch d := drv.(type) {
		case nil:
			return false, fmt.Errorf("%s: nil dialect.Driver: %w", name, core.ErrInvalidArgument)
		case dialect.Tx:
			return false, fmt.Errorf("%s: %T: %w", name, d, sqlstore.ErrTransaction)
		case *dialect.DebugDriver:
			if d == nil {
				return false, fmt.Errorf("%s: nil %T: %w", name, d, core.ErrInvalidArgument)
			}
			drv = d.Driver
		case *entsql.Driver:
			if d == nil {
				return false, fmt.Errorf("%s: nil %T: %w", name, d, core.ErrInvalidArgument)
			}
			switch q := d.ExecQuerier.(type) {
			case nil:
				return false, fmt.Errorf("%s: %T without a database handle: %w", name, d, core.ErrInvalidArgument)
			case *sql.Tx:
				return false, fmt.Errorf("%s: %T over a %T: %w", name, d, q, sqlstore.ErrTransaction)
			case *sql.DB:
				return true, nil
			}
			// ent's driver begins transactions on a *sql.DB only (its Tx
			// panics on anything else).
			return false, nil
		default:
			return true, nil
		}
	}
}

// driver is how the engine knows this package: ent's drivers take the
// dialect's own placeholders.
var driver = sqlstore.Driver{Name: name}

// newStore builds the engine's store under the package's name.
func newStore(e sqlstore.Executor, d sqlstore.Dialect, opts []sqlstore.Option) (*Store, error) {
	s, err := driver.New(e, d, opts...)
	if err != nil {
		return nil, err
	}
	return &Store{s}, nil
}
