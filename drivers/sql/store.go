package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/leasehold/leasehold/core"
)

// Store is a [core.LockStore] and [core.Lister] over a SQL database. Its
// methods are safe for concurrent use, and several Stores (in one process
// or many) may share one table.
type Store struct {
	q     Querier
	b     Beginner // q as a Beginner, or nil
	d     Dialect
	table string
	st    statements
}

var (
	_ core.LockStore = (*Store)(nil)
	_ core.Lister    = (*Store)(nil)
)

// Option configures a [Store].
type Option func(*options)

type options struct {
	table string
}

// WithTable sets the name of the locks table (default [DefaultTable]). The
// other objects of the schema are named after it: the PostgreSQL sequence
// <table>_token_seq, the MySQL and SQLite counter table <table>_counter
// and the SQLite triggers <table>_token_insert and <table>_token_update. The
// name must be a plain identifier of at most 48 characters.
func WithTable(name string) Option { return func(o *options) { o.table = name } }

// New returns a Store over db in dialect d. It does not touch the database:
// call [Store.Migrate] (or run [SchemaSQL] yourself) before the first lock.
func New(db *sql.DB, d Dialect, opts ...Option) (*Store, error) {
	if db == nil {
		return nil, fmt.Errorf("sqlstore: nil *sql.DB: %w", core.ErrInvalidArgument)
	}
	return NewFromQuerier(FromSQL(db), d, opts...)
}

// NewFromQuerier returns a Store that runs its statements through q, for
// handles that are not a *sql.DB (an ORM's connection pool, a *sql.Conn).
// The MySQL dialect needs q to be a [Beginner]; see [FromSQL].
func NewFromQuerier(q Querier, d Dialect, opts ...Option) (*Store, error) {
	if q == nil {
		return nil, fmt.Errorf("sqlstore: nil Querier: %w", core.ErrInvalidArgument)
	}
	if d.build == nil {
		return nil, errZeroDialect
	}
	o := options{table: DefaultTable}
	for _, opt := range opts {
		opt(&o)
	}
	if err := checkTable(o.table); err != nil {
		return nil, err
	}
	b, _ := q.(Beginner)
	if d.txAcquire && b == nil {
		return nil, fmt.Errorf("sqlstore: the %s dialect acquires in a transaction and needs a sqlstore.Beginner, not a %T (see sqlstore.FromSQL): %w", d.name, q, core.ErrInvalidArgument)
	}
	return &Store{q: q, b: b, d: d, table: o.table, st: d.build(o.table)}, nil
}

// String describes the store, for start-up logs.
func (s *Store) String() string {
	return fmt.Sprintf("sqlstore (%s, table %s)", s.d.name, s.table)
}

// Schema returns the statements [Store.Migrate] runs, as plain SQL.
func (s *Store) Schema() []string { return append([]string(nil), s.st.schema...) }

// Migrate creates the schema if it does not exist yet. It is idempotent, and
// safe to run from every instance at start-up.
func (s *Store) Migrate(ctx context.Context) error {
	if err := s.migrate(ctx); err != nil {
		return fmt.Errorf("sqlstore: migrate %s table %s: %w", s.d.name, s.table, err)
	}
	return nil
}

func (s *Store) migrate(ctx context.Context) error {
	if s.st.migrateLock == "" || s.b == nil {
		// MySQL commits at every DDL statement anyway; SQLite runs each
		// statement under its write lock.
		for _, q := range s.st.schema {
			if _, err := s.q.ExecContext(ctx, q); err != nil {
				return err
			}
		}
		return nil
	}
	// PostgreSQL: concurrent CREATE ... IF NOT EXISTS can still collide
	// (on the catalog's unique indexes); an advisory lock makes them queue.
	tx, err := s.b.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback() //nolint:errcheck // after Commit it is a no-op
	for _, q := range append([]string{s.st.migrateLock}, s.st.schema...) {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// ResetTokens sends the token source back to zero, as a restore from an old
// backup would. Keys keep their floors, so their tokens still grow. It is
// for tests (the conformance kit proves the floors with it); never call it
// on a live system.
func (s *Store) ResetTokens(ctx context.Context) error {
	if _, err := s.q.ExecContext(ctx, s.st.resetTokens.sql); err != nil {
		return fmt.Errorf("sqlstore: reset tokens: %w", err)
	}
	return nil
}

// check validates what [core.Locks] validates already, for direct callers:
// a key the database would truncate or fold, or a ttl it would round, must
// not get that far.
func check(key string, ttl time.Duration, withTTL bool) error {
	if err := core.ValidateKey(key); err != nil {
		return err
	}
	if withTTL {
		return core.ValidateTTL(ttl)
	}
	return nil
}

func opError(op, key string, err error) error {
	return fmt.Errorf("sqlstore: %s %q: %w", op, key, err)
}

// Acquire implements [core.LockStore].
func (s *Store) Acquire(ctx context.Context, key, owner string, ttl time.Duration) (int64, bool, error) {
	if err := check(key, ttl, true); err != nil {
		return 0, false, opError("acquire", key, err)
	}
	v := values{key: key, owner: owner, ttlMillis: ttl.Milliseconds()}
	var (
		token int64
		ok    bool
		err   error
	)
	if s.d.txAcquire {
		token, ok, err = s.acquireTx(ctx, v)
	} else {
		ok, err = queryRow(ctx, s.q, s.st.acquire, v, &token)
	}
	if err != nil {
		return 0, false, opError("acquire", key, err)
	}
	if ok && token <= 0 {
		return 0, false, opError("acquire", key, fmt.Errorf("drew token %d: is the token source (%s) intact?", token, s.table))
	}
	return token, ok, nil
}

// acquireTxAttempts bounds the retries of MySQL's acquire after a deadlock.
const acquireTxAttempts = 5

// acquireTx is MySQL's acquire: see mysqlStatements for the statements and
// why. A deadlock rolls the transaction back on the server, so it is run
// again, a bounded number of times; any other failure is returned.
func (s *Store) acquireTx(ctx context.Context, v values) (int64, bool, error) {
	for attempt := 1; ; attempt++ {
		token, ok, err := s.acquireTxOnce(ctx, v)
		if err == nil || attempt == acquireTxAttempts || ctx.Err() != nil || s.d.retryable == nil || !s.d.retryable(err) {
			if err != nil && attempt > 1 {
				err = fmt.Errorf("attempt %d: %w", attempt, err)
			}
			return token, ok, err
		}
	}
}

func (s *Store) acquireTxOnce(ctx context.Context, v values) (token int64, acquired bool, err error) {
	tx, err := s.b.BeginTx(ctx, nil)
	if err != nil {
		return 0, false, err
	}
	done := false
	defer func() {
		if !done {
			tx.Rollback() //nolint:errcheck // the error being returned matters more
		}
	}()
	if _, err := tx.ExecContext(ctx, s.st.ensure.sql, s.st.ensure.bind(v)...); err != nil {
		return 0, false, err
	}
	var floor, live int64
	found, err := queryRow(ctx, tx, s.st.lock, v, &floor, &live)
	if err != nil {
		return 0, false, err
	}
	if !found {
		return 0, false, errors.New("the row just ensured is missing")
	}
	if live != 0 {
		// Decided under the row lock; the rollback only lets go of it.
		done = true
		tx.Rollback() //nolint:errcheck
		return 0, false, nil
	}
	v.token = floor + 1
	res, err := tx.ExecContext(ctx, s.st.draw.sql, s.st.draw.bind(v)...)
	if err != nil {
		return 0, false, err
	}
	if err := oneRow(res); err != nil {
		return 0, false, fmt.Errorf("token counter: %w", err)
	}
	if v.token, err = res.LastInsertId(); err != nil {
		return 0, false, fmt.Errorf("token counter: %w", err)
	}
	res, err = tx.ExecContext(ctx, s.st.take.sql, s.st.take.bind(v)...)
	if err != nil {
		return 0, false, err
	}
	if err := oneRow(res); err != nil {
		return 0, false, err
	}
	done = true
	if err := tx.Commit(); err != nil {
		return 0, false, err
	}
	return v.token, true, nil
}

// Renew implements [core.LockStore].
func (s *Store) Renew(ctx context.Context, key, owner string, ttl time.Duration) (bool, error) {
	if err := check(key, ttl, true); err != nil {
		return false, opError("renew", key, err)
	}
	ok, err := s.execOne(ctx, s.st.renew, values{key: key, owner: owner, ttlMillis: ttl.Milliseconds()})
	if err != nil {
		return false, opError("renew", key, err)
	}
	return ok, nil
}

// Release implements [core.LockStore]. The row stays, owner cleared, as the
// key's token floor.
func (s *Store) Release(ctx context.Context, key, owner string) (bool, error) {
	if err := check(key, 0, false); err != nil {
		return false, opError("release", key, err)
	}
	ok, err := s.execOne(ctx, s.st.release, values{key: key, owner: owner})
	if err != nil {
		return false, opError("release", key, err)
	}
	return ok, nil
}

// List implements [core.Lister]: the live locks whose key starts with
// prefix, ordered by key (byte order).
func (s *Store) List(ctx context.Context, prefix string) ([]core.LockInfo, error) {
	rows, err := s.q.QueryContext(ctx, s.st.list.sql, s.st.list.bind(values{prefix: prefix})...)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: list %q: %w", prefix, err)
	}
	defer rows.Close()
	var out []core.LockInfo
	for rows.Next() {
		var (
			li     core.LockInfo
			micros int64
		)
		if err := rows.Scan(&li.Key, &li.Owner, &li.Token, &micros); err != nil {
			return nil, fmt.Errorf("sqlstore: list %q: %w", prefix, err)
		}
		li.ExpiresIn = time.Duration(micros) * time.Microsecond
		out = append(out, li)
	}
	if err := closeRows(rows); err != nil {
		return nil, fmt.Errorf("sqlstore: list %q: %w", prefix, err)
	}
	return out, nil
}

// execOne runs st, which changes at most one row, and reports whether it did.
func (s *Store) execOne(ctx context.Context, st stmt, v values) (bool, error) {
	res, err := s.q.ExecContext(ctx, st.sql, st.bind(v)...)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	switch {
	case err != nil:
		return false, err
	case n > 1:
		return false, fmt.Errorf("%d rows affected, want at most 1: is lock_key the primary key of %s?", n, s.table)
	}
	return n == 1, nil
}

// oneRow checks that a write the row lock guarantees did happen.
func oneRow(res sql.Result) error {
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n != 1 {
		return fmt.Errorf("%d rows affected, want 1", n)
	}
	return nil
}

// queryRow runs st and scans its first row into dest, reporting whether
// there was one. Errors that arrive after the row (the commit of an
// autocommitted statement, a lost connection) are errors too.
func queryRow(ctx context.Context, q Querier, st stmt, v values, dest ...any) (bool, error) {
	rows, err := q.QueryContext(ctx, st.sql, st.bind(v)...)
	if err != nil {
		return false, err
	}
	found := rows.Next()
	if found {
		if err := rows.Scan(dest...); err != nil {
			rows.Close()
			return false, err
		}
	}
	if err := closeRows(rows); err != nil {
		return false, err
	}
	return found, nil
}

func closeRows(rows *sql.Rows) error {
	if err := rows.Close(); err != nil {
		return err
	}
	return rows.Err()
}
