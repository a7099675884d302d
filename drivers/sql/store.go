package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/leasehold/leasehold/core"
	"github.com/leasehold/leasehold/core/connhint"
)

// Store is a [core.LockStore], a [core.Lister], a [core.BatchRenewer], a
// [core.TryAcquirer] and a [core.Notifier] (on PostgreSQL with a
// [Listener]) over a SQL database: the SQL engine that every SQL driver of leasehold
// shares. Its methods are safe for concurrent use, and several Stores (in
// one process or many, over any client) may share one table.
//
// Errors carry one prefix, the store's name ("sqlstore" unless a driver
// says otherwise with [WithName]); [core.Locks] adds the operation and the
// key. An operation on a database without the table matches
// [ErrNotMigrated].
type Store struct {
	exec      Executor
	tx        Transactor // exec as a Transactor, or nil
	retryable func(error) bool
	d         Dialect
	table     string
	name      string
	st        statements
	lastTTL   atomic.Pointer[boxedTTL] // see ttlArg
	listener  Listener                 // nil: no notifications
	log       *slog.Logger
	notes     listening // see notify.go
}

var (
	_ core.LockStore    = (*Store)(nil)
	_ core.Lister       = (*Store)(nil)
	_ core.BatchRenewer = (*Store)(nil)
)

// Option configures a [Store].
type Option func(*options)

type options struct {
	table       string
	placeholder Placeholder
	name        string
	listener    Listener
	noNotify    bool
	log         *slog.Logger
}

// WithTable sets the name of the locks table (default [DefaultTable], which
// an empty name also means, and [Store.Table] then reports). The
// other objects of the schema are named after it: the PostgreSQL sequence
// <table>_token_seq, the MySQL and SQLite counter table <table>_counter
// and the SQLite triggers <table>_token_insert and <table>_token_update. The
// name must be a plain identifier of at most 48 characters.
func WithTable(name string) Option { return func(o *options) { o.table = name } }

// WithPlaceholder sets the placeholder style of the client that runs the
// statements (default: the dialect's own, [Dollar] on PostgreSQL, [Question]
// on MySQL, [NumberedQuestion] on SQLite). Drivers for ORMs that rewrite
// placeholders themselves, such as GORM and bun, use [Question].
func WithPlaceholder(p Placeholder) Option { return func(o *options) { o.placeholder = p } }

// WithName sets the name a Store gives itself in errors and in String
// (default "sqlstore"). Drivers built on the engine construct their stores
// with a [Driver], which names them after their package, so that a user
// reads "gormstore: ..." in their logs.
func WithName(name string) Option { return func(o *options) { o.name = name } }

// newOptions applies opts to the defaults of dialect d. An empty table
// name means the default; a nil option is an error matching
// [core.ErrInvalidArgument].
func newOptions(d Dialect, opts []Option) (options, error) {
	o := options{table: DefaultTable, placeholder: d.placeholder, name: "sqlstore"}
	var err error
	for i, opt := range opts {
		if opt == nil {
			err = fmt.Errorf("option %d is nil: %w", i, core.ErrInvalidArgument)
			continue
		}
		opt(&o)
	}
	if o.table == "" {
		o.table = DefaultTable
	}
	if err != nil {
		return o, fmt.Errorf("%s: %w", o.name, err)
	}
	return o, nil
}

// NewWithExecutor returns a Store that runs dialect d's statements through
// e: the entry point for drivers of other clients. If e is a [Transactor],
// it is used for transactions; the MySQL dialect needs one and is refused
// without it. If e is a [RetryClassifier], it classifies errors; otherwise
// [Retryable] does. It does not touch the database.
func NewWithExecutor(e Executor, d Dialect, opts ...Option) (*Store, error) {
	o, err := newOptions(d, opts)
	if err != nil {
		return nil, err
	}
	if err := core.ValidateHandle("Executor", e); err != nil {
		return nil, fmt.Errorf("%s: %w", o.name, err)
	}
	t, err := d.templates(o.table)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", o.name, err)
	}
	switch o.placeholder {
	case Dollar, Question, NumberedQuestion:
	default:
		return nil, fmt.Errorf("%s: %v: %w", o.name, o.placeholder, core.ErrInvalidArgument)
	}
	s := &Store{exec: e, retryable: Retryable, d: d, table: o.table, name: o.name, st: t.render(o.placeholder), log: o.log}
	if s.log == nil {
		s.log = slog.Default()
	}
	if !o.noNotify && t.releaseNotify != "" {
		s.listener = o.listener
	}
	s.tx, _ = e.(Transactor)
	if c, ok := e.(RetryClassifier); ok {
		s.retryable = c.Retryable
	}
	if d.txAcquire && s.tx == nil {
		return nil, fmt.Errorf("%s: the %s dialect acquires in a transaction, and a %T cannot begin one (it needs to be a sqlstore.Transactor): %w", o.name, d.name, e, core.ErrInvalidArgument)
	}
	return s, nil
}

// Valid implements [core.Validator]: a Store is usable only as its
// constructors make it, so [core.New] refuses a zero value (or a driver's
// Store whose engine is nil).
func (s *Store) Valid() error {
	if s == nil || s.exec == nil || s.name == "" {
		return errors.New("sqlstore: not made by a constructor (New, NewFromQuerier, NewWithExecutor or a driver's New)")
	}
	return nil
}

// checkCtx refuses a nil ctx, as an error matching [core.ErrInvalidArgument].
func (s *Store) checkCtx(ctx context.Context) error {
	if err := core.ValidateContext(ctx); err != nil {
		return fmt.Errorf("%s: %w", s.name, err)
	}
	return nil
}

// String describes the store, for start-up logs.
func (s *Store) String() string {
	if s.Valid() != nil {
		return "sqlstore (not made by a constructor)"
	}
	return fmt.Sprintf("%s (%s, table %s)", s.name, s.d.name, s.table)
}

// Dialect returns the store's dialect.
func (s *Store) Dialect() Dialect { return s.d }

// Table returns the name of the locks table.
func (s *Store) Table() string { return s.table }

// Schema returns the statements [Store.Migrate] runs, as plain SQL.
func (s *Store) Schema() []string { return append([]string(nil), s.st.schema...) }

// fail prefixes err with the store's name, and names the fix when the
// table is missing.
func (s *Store) fail(err error) error {
	switch {
	case missingTable(err):
		err = &notMigratedError{table: s.table, err: err}
	case brokenConn(err):
		err = brokenConnError{err}
	}
	return fmt.Errorf("%s: %w", s.name, err)
}

// Migrate creates the schema if it does not exist yet. It is idempotent, and
// safe to run from every instance at start-up. On PostgreSQL it runs in a
// transaction under an advisory lock, so concurrent migrations queue
// instead of colliding on the catalog; a handle that cannot begin
// transactions is an error there. On SQLite it first reads whether the
// whole schema is there, and then writes nothing: an instance that starts
// while others keep the database's one write lock busy does not wait for
// it. When SQLite refuses the read or a statement with SQLITE_BUSY without
// waiting (as it refuses a new connection whose DSN switches a new file to
// WAL mode while another connection does), Migrate tries again, up to five
// times.
func (s *Store) Migrate(ctx context.Context) error {
	if err := s.checkCtx(ctx); err != nil {
		return err
	}
	if err := s.migrate(ctx); err != nil {
		return fmt.Errorf("%s: migrate %s table %s: %w", s.name, s.d.name, s.table, connhint.Wrap(err))
	}
	return nil
}

func (s *Store) migrate(ctx context.Context) error {
	if s.st.migrateLock != "" {
		if s.tx == nil {
			return fmt.Errorf("concurrent migrations are serialised in a transaction, and a %T cannot begin one: run the statements of Schema in your own migrations instead", s.exec)
		}
		// PostgreSQL: concurrent CREATE ... IF NOT EXISTS can still collide
		// (on the catalog's unique indexes); an advisory lock makes them
		// queue.
		return s.tx.InTx(ctx, func(tx Executor) error {
			return runAll(ctx, tx, append([]string{s.st.migrateLock}, s.st.schema...))
		})
	}
	// MySQL commits at every DDL statement anyway; SQLite runs each
	// statement under its write lock. SQLite refuses a new connection to a
	// file not yet in WAL mode at once, without its busy timeout, when the
	// connection's own "PRAGMA journal_mode=WAL" meets another connection
	// switching the file, as in concurrent first migrations of a new file.
	// Reading and creating the schema are idempotent: they run again.
	for attempt := 1; ; attempt++ {
		err := s.createSchema(ctx)
		if err == nil || attempt == schemaAttempts || !sqliteBusy(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(time.Duration(attempt) * 10 * time.Millisecond):
		}
	}
}

// createSchema runs the schema statements outside a transaction, unless the
// dialect can read that the whole schema is there.
func (s *Store) createSchema(ctx context.Context) error {
	if s.st.migrated.sql != "" {
		var done int64
		if err := s.exec.Query(ctx, s.st.migrated.sql, nil, func(r Row) error { return r.Scan(&done) }); err != nil {
			return err
		}
		if done != 0 {
			return nil
		}
	}
	return runAll(ctx, s.exec, s.st.schema)
}

// runAll runs stmts in order on e, up to the first error.
func runAll(ctx context.Context, e Executor, stmts []string) error {
	for _, q := range stmts {
		if _, err := e.Exec(ctx, q, nil); err != nil {
			return err
		}
	}
	return nil
}

// schemaAttempts bounds Migrate's attempts (the read, then the schema
// statements) on a database that refuses them with SQLITE_BUSY.
const schemaAttempts = 5

// ResetTokens sends the token source back to zero, as a restore from an old
// backup would. Keys keep their floors, so their tokens still grow. It is
// for tests (the conformance kit proves the floors with it); never call it
// on a live system.
func (s *Store) ResetTokens(ctx context.Context) error {
	if err := s.checkCtx(ctx); err != nil {
		return err
	}
	if _, err := s.exec.Exec(ctx, s.st.reset.sql, nil); err != nil {
		return s.fail(err)
	}
	return nil
}

// Acquire implements [core.LockStore]. Keys and ttls are trusted: core
// validates them before any store call.
func (s *Store) Acquire(ctx context.Context, key, owner string, ttl time.Duration) (int64, bool, error) {
	token, ok, _, err := s.acquire(ctx, key, owner, ttl, false)
	return token, ok, err
}

// TryAcquire implements [core.TryAcquirer]: Acquire, and on refusal the
// milliseconds the holder has left on the database's clock. PostgreSQL's
// acquire statement answers them itself, and MySQL's transaction reads
// them under the row lock it takes anyway; SQLite reads them with one more
// statement after a refusal (in the process, no round trip).
func (s *Store) TryAcquire(ctx context.Context, key, owner string, ttl time.Duration) (int64, bool, time.Duration, error) {
	return s.acquire(ctx, key, owner, ttl, true)
}

// acquire is Acquire, and with wantLeft TryAcquire.
func (s *Store) acquire(ctx context.Context, key, owner string, ttl time.Duration, wantLeft bool) (int64, bool, time.Duration, error) {
	if ctx == nil {
		return 0, false, 0, s.checkCtx(ctx)
	}
	v := values{key: key, owner: owner, ttlMillis: ttl.Milliseconds(), ttl: s.ttlArg(ttl)}
	var (
		token, left int64
		ok          bool
		err         error
	)
	if s.d.txAcquire {
		token, ok, left, err = s.acquireTx(ctx, v)
	} else {
		var row [3]int64
		_, row, err = queryRow(ctx, s.exec, s.st.acquire, v, 2)
		token, left = row[0], row[1]
		ok = token > 0
		if err == nil && !ok && wantLeft && s.st.left.sql != "" {
			// A hint only: the decision above stands whatever this says.
			if _, row, lerr := queryRow(ctx, s.exec, s.st.left, v, 1); lerr == nil {
				left = row[0]
			}
		}
	}
	if err != nil {
		return 0, false, 0, s.fail(err)
	}
	return token, ok, time.Duration(max(left, 0)) * time.Millisecond, nil
}

// txAttempts bounds the runs of a MySQL transaction after deadlocks.
const txAttempts = 5

// errHeld ends the acquire transaction when a live lock holds the key.
var errHeld = errors.New("held")

// acquireTx is MySQL's acquire: see mysqlTemplates for the statements and
// why.
func (s *Store) acquireTx(ctx context.Context, v values) (token int64, ok bool, left int64, err error) {
	err = s.retryTx(ctx, func() (err error) {
		token, left, err = s.acquireTxOnce(ctx, v)
		return err
	})
	switch {
	case err == nil:
		return token, true, 0, nil
	case errors.Is(err, errHeld):
		return 0, false, left, nil
	}
	return 0, false, 0, err
}

// retryTx calls run, a transaction, and calls it again, up to txAttempts
// times in all, while it fails with an error after which the server rolled
// the transaction back whole (a deadlock); any other failure is returned.
func (s *Store) retryTx(ctx context.Context, run func() error) error {
	for attempt := 1; ; attempt++ {
		err := run()
		if err == nil || attempt == txAttempts || ctx.Err() != nil || !s.retryable(err) {
			if err != nil && attempt > 1 {
				err = fmt.Errorf("attempt %d: %w", attempt, err)
			}
			return err
		}
	}
}

func (s *Store) acquireTxOnce(ctx context.Context, v values) (token, left int64, err error) {
	err = s.tx.InTx(ctx, func(tx Executor) error {
		if _, err := tx.Exec(ctx, s.st.ensure.sql, s.st.ensure.args(v)); err != nil {
			return err
		}
		found, row, err := queryRow(ctx, tx, s.st.lock, v, 3)
		floor, live := row[0], row[1]
		left = row[2]
		if err != nil {
			return err
		}
		if !found {
			return errors.New("the row just ensured is missing")
		}
		if live != 0 {
			// Decided under the row lock; the rollback only lets go of it.
			return errHeld
		}
		v.token = floor + 1
		res, err := tx.Exec(ctx, s.st.draw.sql, s.st.draw.args(v))
		if err != nil {
			return err
		}
		if err := wantRows(res, 1); err != nil {
			return fmt.Errorf("token counter: %w", err)
		}
		if v.token, err = res.LastInsertId(); err != nil {
			return fmt.Errorf("token counter: %w", err)
		}
		res, err = tx.Exec(ctx, s.st.take.sql, s.st.take.args(v))
		if err != nil {
			return err
		}
		return wantRows(res, 1)
	})
	return v.token, left, err
}

// Renew implements [core.LockStore].
func (s *Store) Renew(ctx context.Context, key, owner string, ttl time.Duration) (bool, error) {
	if ctx == nil {
		return false, s.checkCtx(ctx)
	}
	ok, err := s.execOne(ctx, s.st.renew, values{key: key, owner: owner, ttlMillis: ttl.Milliseconds(), ttl: s.ttlArg(ttl)})
	if err != nil {
		return false, s.fail(err)
	}
	return ok, nil
}

// Release implements [core.LockStore]. The row stays, owner cleared, as the
// key's token floor.
func (s *Store) Release(ctx context.Context, key, owner string) (bool, error) {
	if ctx == nil {
		return false, s.checkCtx(ctx)
	}
	v := values{key: key, owner: owner}
	var (
		ok  bool
		err error
	)
	if s.st.releaseNotify.sql != "" {
		var row [3]int64
		_, row, err = queryRow(ctx, s.exec, s.st.releaseNotify, v, 1)
		if err == nil && row[0] > 1 {
			err = fmt.Errorf("%d rows released, want at most 1: is lock_key the primary key of %s?", row[0], s.table)
		}
		ok = row[0] == 1
	} else {
		ok, err = s.execOne(ctx, s.st.release, v)
	}
	if err != nil {
		return false, s.fail(err)
	}
	return ok, nil
}

// List implements [core.Lister]: the live locks whose key starts with
// prefix, ordered by key (byte order).
func (s *Store) List(ctx context.Context, prefix string) ([]core.LockInfo, error) {
	if err := s.checkCtx(ctx); err != nil {
		return nil, err
	}
	var out []core.LockInfo
	err := s.exec.Query(ctx, s.st.list.sql, s.st.list.args(values{prefix: prefix}), func(r Row) error {
		var (
			li     core.LockInfo
			micros int64
		)
		if err := r.Scan(&li.Key, &li.Owner, &li.Token, &micros); err != nil {
			return err
		}
		li.ExpiresIn = time.Duration(micros) * time.Microsecond
		out = append(out, li)
		return nil
	})
	if err != nil {
		return nil, s.fail(err)
	}
	return out, nil
}

// execOne runs st, which changes at most one row, and reports whether it did.
func (s *Store) execOne(ctx context.Context, st stmt, v values) (bool, error) {
	res, err := s.exec.Exec(ctx, st.sql, st.args(v))
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

// wantRows checks that a write the row lock guarantees did happen.
func wantRows(res interface{ RowsAffected() (int64, error) }, want int64) error {
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n != want {
		return fmt.Errorf("%d rows affected, want %d", n, want)
	}
	return nil
}

// queryRow runs st and reads the first n (at most 3) int64 columns of its
// first row, if any. Its scan state comes from a pool, so that it costs no
// allocation beyond the statement's arguments.
func queryRow(ctx context.Context, e Executor, st stmt, v values, n int) (found bool, row [3]int64, err error) {
	r := rowPool.Get().(*rowScan)
	r.found, r.n = false, n
	err = e.Query(ctx, st.sql, st.args(v), r.fn)
	found, row = r.found, r.ints
	r.ints = [3]int64{}
	rowPool.Put(r)
	return found, row, err
}

// rowScan is queryRow's scan callback with its state, made once per pooled
// value: a closure or a method value made per call would be an allocation.
type rowScan struct {
	found bool
	n     int
	ints  [3]int64
	dest  [3]any // &ints[0], &ints[1], &ints[2]
	fn    func(Row) error
}

var rowPool = sync.Pool{New: func() any {
	r := new(rowScan)
	r.dest = [3]any{&r.ints[0], &r.ints[1], &r.ints[2]}
	r.fn = r.scan
	return r
}}

func (r *rowScan) scan(row Row) error {
	if r.found {
		return nil // only the first row counts
	}
	r.found = true
	return row.Scan(r.dest[:r.n]...)
}

// ttlArg returns ttl in milliseconds as a statement argument. Boxing an
// int64 in an interface allocates; a service's locks mostly share one ttl,
// so the last one is kept.
func (s *Store) ttlArg(ttl time.Duration) any {
	ms := ttl.Milliseconds()
	if b := s.lastTTL.Load(); b != nil && b.ms == ms {
		return b.arg
	}
	b := &boxedTTL{ms: ms, arg: ms}
	s.lastTTL.Store(b)
	return b.arg
}

type boxedTTL struct {
	ms  int64
	arg any
}
