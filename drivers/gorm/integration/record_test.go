package integration_test

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	sqlstore "github.com/leasehold/leasehold/drivers/sql"
)

// call is one statement with its arguments, or a transaction's BEGIN,
// COMMIT or ROLLBACK (with no arguments).
type call struct {
	sql   string
	args  []any
	query bool // run for its rows
}

func (c call) String() string { return fmt.Sprintf("%q %v", c.sql, c.args) }

// Transaction boundaries, as a call's sql.
const (
	begin    = "BEGIN"
	commit   = "COMMIT"
	rollback = "ROLLBACK"
)

// calls records calls, safely across goroutines.
type calls struct {
	mu   sync.Mutex
	list []call
}

func (c *calls) add(sql string, args []any, query bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.list = append(c.list, call{sql, slices.Clone(args), query})
}

// take returns the calls recorded so far and forgets them.
func (c *calls) take() []call {
	c.mu.Lock()
	defer c.mu.Unlock()
	l := c.list
	c.list = nil
	return l
}

// recording is a gorm.ConnPool that records what GORM hands database/sql:
// the statements exactly as they go to the server.
type recording struct {
	gorm.ConnPool
	log *calls
}

func (r recording) PrepareContext(ctx context.Context, query string) (*sql.Stmt, error) {
	r.log.add(query, nil, false)
	return r.ConnPool.PrepareContext(ctx, query)
}

func (r recording) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	r.log.add(query, args, false)
	return r.ConnPool.ExecContext(ctx, query, args...)
}

func (r recording) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	r.log.add(query, args, true)
	return r.ConnPool.QueryContext(ctx, query, args...)
}

func (r recording) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	r.log.add(query, args, true)
	return r.ConnPool.QueryRowContext(ctx, query, args...)
}

// recordingDB is a recording *sql.DB: GORM begins its transactions through
// it (gorm.ConnPoolBeginner), and db.DB() finds the pool (GetDBConn).
type recordingDB struct {
	recording
	db *sql.DB
}

func record(db *sql.DB, log *calls) recordingDB {
	return recordingDB{recording{db, log}, db}
}

func (r recordingDB) BeginTx(ctx context.Context, opts *sql.TxOptions) (gorm.ConnPool, error) {
	r.log.add(begin, nil, false)
	tx, err := r.db.BeginTx(ctx, opts)
	if err != nil {
		return nil, err
	}
	return &recordingTx{recording{tx, r.log}, tx}, nil
}

func (r recordingDB) GetDBConn() (*sql.DB, error) { return r.db, nil }

// recordingTx is a recording *sql.Tx (a gorm.TxCommitter; a pointer, since
// GORM checks the committer for nil with reflect).
type recordingTx struct {
	recording
	tx *sql.Tx
}

func (r *recordingTx) Commit() error {
	r.log.add(commit, nil, false)
	return r.tx.Commit()
}

func (r *recordingTx) Rollback() error {
	r.log.add(rollback, nil, false)
	return r.tx.Rollback()
}

// traceLogger is a GORM logger that keeps what GORM's logger is given for
// each statement: the SQL with its arguments explained, the rows affected
// and the error.
type traceLogger struct {
	mu     sync.Mutex
	traced []traced
}

type traced struct {
	sql  string
	rows int64
	err  error
}

var _ logger.Interface = (*traceLogger)(nil)

func (l *traceLogger) LogMode(logger.LogLevel) logger.Interface { return l }
func (l *traceLogger) Info(context.Context, string, ...any)     {}
func (l *traceLogger) Warn(context.Context, string, ...any)     {}
func (l *traceLogger) Error(context.Context, string, ...any)    {}

func (l *traceLogger) Trace(_ context.Context, _ time.Time, fc func() (string, int64), err error) {
	sql, rows := fc()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.traced = append(l.traced, traced{sql, rows, err})
}

func (l *traceLogger) take() []traced {
	l.mu.Lock()
	defer l.mu.Unlock()
	t := l.traced
	l.traced = nil
	return t
}

// scripted is an executor that runs nothing: it records the statements the
// engine hands it and answers as a database would when every operation
// succeeds (one row changed, LAST_INSERT_ID 1, one row of zeros for a
// query). It shows what the engine writes for an operation.
type scripted struct{ log *calls }

func (s scripted) Exec(_ context.Context, q string, args []any) (sql.Result, error) {
	s.log.add(q, args, false)
	return oneRow{}, nil
}

func (s scripted) Query(_ context.Context, q string, args []any, scan func(sqlstore.Row) error) error {
	s.log.add(q, args, true)
	return scan(zeroRow{})
}

func (s scripted) InTx(_ context.Context, fn func(tx sqlstore.Executor) error) error {
	s.log.add(begin, nil, false)
	if err := fn(s); err != nil {
		s.log.add(rollback, nil, false)
		return err
	}
	s.log.add(commit, nil, false)
	return nil
}

type oneRow struct{}

func (oneRow) LastInsertId() (int64, error) { return 1, nil }
func (oneRow) RowsAffected() (int64, error) { return 1, nil }

type zeroRow struct{}

func (zeroRow) Scan(dest ...any) error {
	for _, d := range dest {
		switch d := d.(type) {
		case *int64:
			*d = 0
		case *string:
			*d = ""
		default:
			return fmt.Errorf("zeroRow: cannot scan into %T", d)
		}
	}
	return nil
}

// engineStore returns a store of dialect d over a scripted executor that
// records into log, with the placeholder style gormstore uses.
func engineStore(d sqlstore.Dialect, log *calls) (*sqlstore.Store, error) {
	return sqlstore.NewWithExecutor(scripted{log}, d, sqlstore.WithPlaceholder(sqlstore.Question))
}

// dollars numbers the ? placeholders of q as $1, $2, ..., as GORM's
// PostgreSQL dialector does.
func dollars(q string) string {
	var b strings.Builder
	n := 0
	for _, r := range q {
		if r == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}
