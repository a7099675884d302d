package gormstore

import (
	"context"
	"database/sql"
	"errors"

	"gorm.io/gorm"

	sqlstore "github.com/leasehold/leasehold/drivers/sql"
)

// resolverWrite is the statement setting by which gorm.io/plugin/dbresolver
// knows a statement as a write (what its dbresolver.Write clause sets). The
// store puts it on every statement, so that none is sent to a replica:
// dbresolver would otherwise send List, which starts with SELECT, to one,
// and a replica lags behind the primary. Without dbresolver nothing reads
// it. Setting it by name keeps dbresolver out of this module's
// dependencies; the driver's tests prove it against dbresolver.
const resolverWrite = "gorm:db_resolver:write"

// executor runs the engine's statements through GORM: Exec for statements
// without rows, Raw(...).Rows for those with rows, Transaction for
// transactions. Each goes through GORM's callbacks, so its logger and
// plugins see it. The engine renders every statement with ? placeholders
// and scalar arguments (strings and int64s), and without @, so GORM's
// parsing of the text (named @arguments, slices expanded after "(") has
// nothing to change but the placeholders; the integration tests prove it
// on every dialect.
type executor struct {
	db *gorm.DB
}

var _ sqlstore.Transactor = executor{}

// newExecutor returns the executor of db, a *gorm.DB that is not in a
// transaction, as a reusable session marked for dbresolver.
func newExecutor(db *gorm.DB) executor {
	// The first Session keeps Set from writing to the caller's statement;
	// the last makes the result safe to start every call from.
	return executor{db: db.Session(&gorm.Session{}).Set(resolverWrite, struct{}{}).Session(&gorm.Session{})}
}

// errNotRun is returned when GORM reports success for a statement it did
// not run (a callback of a plugin skipped it).
var errNotRun = errors.New("GORM returned no result for the statement: a callback skipped it")

func (e executor) Exec(ctx context.Context, query string, args []any) (sql.Result, error) {
	r := gorm.WithResult()
	if err := e.db.WithContext(ctx).Clauses(r).Exec(query, args...).Error; err != nil {
		return nil, err
	}
	if r.Result == nil {
		return nil, errNotRun
	}
	return r.Result, nil
}

func (e executor) Query(ctx context.Context, query string, args []any, scan func(sqlstore.Row) error) error {
	rows, err := e.db.WithContext(ctx).Raw(query, args...).Rows()
	if err != nil {
		return err
	}
	if rows == nil {
		return errNotRun
	}
	return sqlstore.ScanRows(rows, scan)
}

// InTx runs fn in db.Transaction: GORM begins on the session's pool (the
// one dbresolver's Write clause picked, if the caller's db has it), and
// commits or rolls back.
func (e executor) InTx(ctx context.Context, fn func(tx sqlstore.Executor) error) error {
	return e.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		return fn(executor{db: tx})
	})
}
