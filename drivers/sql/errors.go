package sqlstore

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/go-sql-driver/mysql"

	"github.com/leasehold/leasehold/core"
)

// ErrTransaction is the cause of the error a constructor returns for a
// handle that is inside a transaction (a *sql.Tx, an ORM's transaction). A
// lock taken in an uncommitted transaction is invisible to other instances
// and vanishes at rollback, and its renewals would queue behind the
// transaction's own row locks. It matches [core.ErrInvalidArgument].
var ErrTransaction = fmt.Errorf("the handle is inside a transaction, so its locks would exclude nobody; give the store the database handle itself: %w", core.ErrInvalidArgument)

// ErrNotMigrated matches the error of an operation on a database without
// the locks table: run [Store.Migrate] at start-up, or the statements of
// [SchemaSQL] in your own migrations.
var ErrNotMigrated = errors.New("the locks table does not exist: run the store's Migrate at start-up, or the statements of sqlstore.SchemaSQL in your migrations")

// UnsupportedDialectError is returned for a database whose dialect the SQL
// engine does not have. It matches [core.ErrInvalidArgument].
type UnsupportedDialectError struct {
	// Name is the dialect's name as the client reported it.
	Name string
}

func (e *UnsupportedDialectError) Error() string {
	return fmt.Sprintf("unsupported SQL dialect %q: leasehold supports postgres, mysql (and MariaDB) and sqlite", e.Name)
}

// Is reports whether target is [core.ErrInvalidArgument].
func (e *UnsupportedDialectError) Is(target error) bool { return target == core.ErrInvalidArgument }

var errZeroDialect = fmt.Errorf("zero Dialect; use sqlstore.Postgres, sqlstore.MySQL or sqlstore.SQLite: %w", core.ErrInvalidArgument)

// MySQL error numbers after which InnoDB has rolled back (a deadlock) or
// the transaction is rolled back by the store (a lock wait timeout), so the
// acquire transaction may run again.
const (
	erLockWaitTimeout = 1205
	erLockDeadlock    = 1213
	erNoSuchTable     = 1146
)

// Retryable reports whether err says that a transaction was rolled back
// whole and may run again: a MySQL deadlock (1213) or lock wait timeout
// (1205) from go-sql-driver/mysql, the driver of database/sql, GORM, bun
// and ent on MySQL, or a PostgreSQL serialization failure or deadlock
// (SQLSTATE 40001, 40P01) from any driver whose errors have a SQLState
// method (pgx, lib/pq). An [Executor] with other error types implements
// [RetryClassifier].
func Retryable(err error) bool {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		return me.Number == erLockDeadlock || me.Number == erLockWaitTimeout
	}
	state := sqlState(err)
	return state == "40001" || state == "40P01"
}

// brokenConnError is go-sql-driver's ErrInvalidConn, which the driver
// returns when a connection broke after the request may have left (it
// returns driver.ErrBadConn, which database/sql retries, when nothing was
// sent). It also matches io.ErrUnexpectedEOF, so that core counts the
// call's outcome as unknown instead of a refusal: an acquire and its
// release that both fail this way in a reset storm may have taken the key.
type brokenConnError struct{ error }

func (e brokenConnError) Unwrap() []error { return []error{e.error, io.ErrUnexpectedEOF} }

// brokenConn reports whether err is go-sql-driver's ErrInvalidConn.
func brokenConn(err error) bool { return errors.Is(err, mysql.ErrInvalidConn) }

// missingTable reports whether err says that a table does not exist.
func missingTable(err error) bool {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		return me.Number == erNoSuchTable
	}
	if sqlState(err) == "42P01" {
		return true
	}
	// SQLite's drivers report SQLITE_ERROR with this text.
	return strings.Contains(err.Error(), "no such table")
}

// sqliteBusy reports whether err is SQLite's SQLITE_BUSY, which its drivers
// report with this text (sqlite3_errstr's).
func sqliteBusy(err error) bool { return strings.Contains(err.Error(), "database is locked") }

// sqlState returns the SQLSTATE of a PostgreSQL driver's error, or "".
func sqlState(err error) string {
	var se interface{ SQLState() string }
	if errors.As(err, &se) {
		return se.SQLState()
	}
	return ""
}

// notMigratedError wraps an error that says the locks table is missing, so
// that it names the fix and matches [ErrNotMigrated].
type notMigratedError struct {
	table string
	err   error
}

func (e *notMigratedError) Error() string {
	return fmt.Sprintf("table %q: %v (%v)", e.table, ErrNotMigrated, e.err)
}

func (e *notMigratedError) Unwrap() []error { return []error{ErrNotMigrated, e.err} }
