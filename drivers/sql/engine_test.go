package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/leasehold/leasehold/core"
)

func TestRender(t *testing.T) {
	const tmpl = `UPDATE t SET a = {ttl} WHERE k = {key} AND o = {owner} AND k >= {key}`
	for _, tc := range []struct {
		p      Placeholder
		sql    string
		params []param
	}{
		{Dollar, `UPDATE t SET a = $1 WHERE k = $2 AND o = $3 AND k >= $2`, []param{pTTL, pKey, pOwner}},
		{NumberedQuestion, `UPDATE t SET a = ?1 WHERE k = ?2 AND o = ?3 AND k >= ?2`, []param{pTTL, pKey, pOwner}},
		{Question, `UPDATE t SET a = ? WHERE k = ? AND o = ? AND k >= ?`, []param{pTTL, pKey, pOwner, pKey}},
	} {
		st := render(tmpl, tc.p)
		if st.sql != tc.sql || fmt.Sprint(st.params) != fmt.Sprint(tc.params) {
			t.Errorf("%v: render = %q %v; want %q %v", tc.p, st.sql, st.params, tc.sql, tc.params)
		}
		args := st.args(values{key: "k", owner: "o", ttlMillis: 5})
		if len(args) != len(tc.params) || args[0] != int64(5) {
			t.Errorf("%v: args = %v", tc.p, args)
		}
	}
}

// Every statement of every dialect renders in every style with no
// template left, and binds one value per placeholder.
func TestEveryStatementRenders(t *testing.T) {
	for _, d := range []Dialect{Postgres, MySQL, SQLite} {
		tm, err := d.templates("")
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range []Placeholder{Dollar, Question, NumberedQuestion} {
			st := tm.render(p)
			for name, s := range map[string]stmt{"acquire": st.acquire, "ensure": st.ensure, "lock": st.lock, "draw": st.draw, "take": st.take, "renew": st.renew, "release": st.release, "releaseNotify": st.releaseNotify, "left": st.left, "list": st.list, "reset": st.reset, "migrated": st.migrated,
				"renewBatch": st.renewBatch, "renewMarked": st.renewMarked, "readMarked": st.readMarked} {
				if strings.ContainsAny(s.sql, "{}") {
					t.Errorf("%v %v %s: template left in %q", d, p, name, s.sql)
				}
				if p == Question && strings.Count(s.sql, "?") != len(s.params) {
					t.Errorf("%v %s: %d placeholders, %d params", d, name, strings.Count(s.sql, "?"), len(s.params))
				}
			}
		}
	}
}

func TestDialectNamed(t *testing.T) {
	for name, want := range map[string]Dialect{"postgres": Postgres, "PostgreSQL": Postgres, "pgx": Postgres, "pg": Postgres, "mysql": MySQL, "sqlite3": SQLite, "sqlite": SQLite} {
		if d, err := DialectNamed(name); err != nil || d.String() != want.String() {
			t.Errorf("DialectNamed(%q) = %v, %v", name, d, err)
		}
	}
	_, err := DialectNamed("sqlserver")
	var ue *UnsupportedDialectError
	if !errors.As(err, &ue) || ue.Name != "sqlserver" || !errors.Is(err, core.ErrInvalidArgument) || !strings.Contains(err.Error(), "postgres") {
		t.Errorf("DialectNamed(sqlserver) error %v", err)
	}
}

func TestConstructorErrors(t *testing.T) {
	for _, name := range []string{"1abc", "a-b", "a.b", "a b", `a"b`, "a`b", "é", strings.Repeat("x", 49)} {
		if _, err := SchemaSQL(Postgres, name); !errors.Is(err, core.ErrInvalidArgument) {
			t.Errorf("SchemaSQL(%q): %v", name, err)
		}
		if _, err := NewWithExecutor(&fakeExec{}, SQLite, WithTable(name)); !errors.Is(err, core.ErrInvalidArgument) {
			t.Errorf("WithTable(%q): %v", name, err)
		}
	}
	for _, err := range []error{
		func() error { _, err := New(nil, Postgres); return err }(),
		func() error { _, err := NewFromQuerier(nil, Postgres); return err }(),
		func() error { _, err := NewWithExecutor(nil, Postgres); return err }(),
		func() error { _, err := SchemaSQL(Dialect{}, ""); return err }(),
		func() error { _, err := NewWithExecutor(&fakeExec{}, Postgres, WithPlaceholder(0)); return err }(),
		// MySQL needs transactions; an executor without them is refused.
		func() error { _, err := NewWithExecutor(&fakeExec{}, MySQL); return err }(),
	} {
		if !errors.Is(err, core.ErrInvalidArgument) {
			t.Errorf("error %v does not match core.ErrInvalidArgument", err)
		}
	}
	if _, err := NewWithExecutor(&fakeTx{}, MySQL); err != nil {
		t.Errorf("NewWithExecutor(Transactor, MySQL): %v", err)
	}
	for _, d := range []Dialect{Postgres, MySQL, SQLite} {
		sch, err := SchemaSQL(d, "")
		drop, derr := DropSQL(d, "")
		if err != nil || derr != nil || len(sch) == 0 || len(drop) == 0 || !strings.Contains(sch[0]+sch[len(sch)-1], DefaultTable) {
			t.Errorf("SchemaSQL(%v, '') = %v, %v; DropSQL = %v, %v", d, sch, err, drop, derr)
		}
	}
}

func TestRetryable(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{&mysql.MySQLError{Number: 1213}, true},
		{fmt.Errorf("wrapped: %w", errors.Join(errors.New("x"), &mysql.MySQLError{Number: 1205})), true},
		{&mysql.MySQLError{Number: 1146}, false},
		{sqlStateError("40001"), true},
		{sqlStateError("40P01"), true},
		{sqlStateError("23505"), false},
		{errors.New("Error 1213"), false},
		{nil, false},
	} {
		if got := Retryable(tc.err); got != tc.want {
			t.Errorf("Retryable(%v) = %v", tc.err, got)
		}
	}
}

type sqlStateError string

func (e sqlStateError) Error() string    { return "SQLSTATE " + string(e) }
func (e sqlStateError) SQLState() string { return string(e) }

// fakeExec answers every statement from a script, and records them with
// their arguments.
type fakeExec struct {
	stmts []string
	args  [][]any
	exec  func(query string) (sql.Result, error)
	query func(query string, scan func(Row) error) error
}

func (f *fakeExec) Exec(_ context.Context, q string, args []any) (sql.Result, error) {
	f.stmts = append(f.stmts, q)
	f.args = append(f.args, args)
	if f.exec == nil {
		return result{1, 0}, nil
	}
	return f.exec(q)
}

func (f *fakeExec) Query(_ context.Context, q string, args []any, scan func(Row) error) error {
	f.stmts = append(f.stmts, q)
	f.args = append(f.args, args)
	if f.query == nil {
		return nil
	}
	return f.query(q, scan)
}

// fakeTx is a fakeExec that runs transactions, counting them.
type fakeTx struct {
	fakeExec
	began, committed int
}

func (f *fakeTx) InTx(ctx context.Context, fn func(tx Executor) error) error {
	f.began++
	if err := fn(&f.fakeExec); err != nil {
		return err
	}
	f.committed++
	return nil
}

type result struct{ rows, id int64 }

func (r result) RowsAffected() (int64, error) { return r.rows, nil }
func (r result) LastInsertId() (int64, error) { return r.id, nil }

type row []any

func (r row) Scan(dest ...any) error {
	for i, d := range dest {
		switch d := d.(type) {
		case *int64:
			*d = r[i].(int64)
		case *string:
			*d = r[i].(string)
		}
	}
	return nil
}

// MySQL's acquire runs again after a deadlock, up to its bound, and never
// after another error; a held key is "not acquired", not an error.
func TestMySQLAcquireRetries(t *testing.T) {
	deadlock := &mysql.MySQLError{Number: 1213}
	for _, tc := range []struct {
		name     string
		failures int
		err      error
		live     int64
		wantOK   bool
		wantErr  bool
		attempts int
	}{
		{"deadlock then success", 2, deadlock, 0, true, false, 3},
		{"deadlock every time", 100, deadlock, 0, false, true, txAttempts},
		{"other error", 1, errors.New("connection reset"), 0, false, true, 1},
		{"held", 0, nil, 1, false, false, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeTx{}
			draws := 0
			f.exec = func(q string) (sql.Result, error) {
				if strings.Contains(q, "LAST_INSERT_ID") {
					if draws++; draws <= tc.failures {
						return nil, tc.err
					}
					return result{1, 42}, nil
				}
				return result{1, 0}, nil
			}
			f.query = func(q string, scan func(Row) error) error { return scan(row{int64(7), tc.live, int64(1500)}) }
			s, err := NewWithExecutor(f, MySQL)
			if err != nil {
				t.Fatal(err)
			}
			token, ok, left, err := s.TryAcquire(context.Background(), "k", "o", time.Minute)
			if want := time.Duration(tc.live) * 1500 * time.Millisecond; left != want {
				t.Fatalf("left %v, want %v (the holder's, when held)", left, want)
			}
			if ok != tc.wantOK || (err != nil) != tc.wantErr || f.began != tc.attempts {
				t.Fatalf("Acquire = %d, %v, %v after %d attempts; want ok %v, error %v, %d attempts", token, ok, err, f.began, tc.wantOK, tc.wantErr, tc.attempts)
			}
			if ok && token != 42 {
				t.Fatalf("token %d, want the counter's 42", token)
			}
		})
	}
}

// Migrate on PostgreSQL takes the advisory lock first, in the transaction;
// without transactions it refuses rather than migrate unserialised.
func TestMigrateLocksOnPostgres(t *testing.T) {
	f := &fakeTx{}
	s, err := NewWithExecutor(f, Postgres)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	if f.committed != 1 || !strings.Contains(f.stmts[0], "pg_advisory_xact_lock") || len(f.stmts) != 1+len(s.Schema()) {
		t.Fatalf("Migrate ran %q in %d transactions", f.stmts, f.committed)
	}
	bare, _ := NewWithExecutor(&fakeExec{}, Postgres)
	if err := bare.Migrate(context.Background()); err == nil || !strings.Contains(err.Error(), "transaction") {
		t.Fatalf("Migrate without transactions: %v", err)
	}
}

// Errors carry the store's name once, and a missing table names the fix.
func TestErrors(t *testing.T) {
	f := &fakeExec{exec: func(string) (sql.Result, error) {
		return nil, &mysql.MySQLError{Number: 1146, Message: "Table 'test.leasehold_locks' doesn't exist"}
	}}
	s, _ := NewWithExecutor(f, SQLite, WithName("gormstore"))
	_, err := s.Renew(context.Background(), "k", "o", time.Minute)
	if !errors.Is(err, ErrNotMigrated) || !strings.HasPrefix(err.Error(), "gormstore: ") || strings.Count(err.Error(), "gormstore") != 1 || !strings.Contains(err.Error(), "doesn't exist") {
		t.Fatalf("error %v", err)
	}
	var me *mysql.MySQLError
	if !errors.As(err, &me) {
		t.Fatalf("error %v hides the driver's error", err)
	}
	if got := s.String(); got != "gormstore (SQLite, table leasehold_locks)" {
		t.Fatalf("String() = %q", got)
	}
	// More than one row renewed means the table is not ours.
	f.exec = func(string) (sql.Result, error) { return result{2, 0}, nil }
	if _, err := s.Renew(context.Background(), "k", "o", time.Minute); err == nil || !strings.Contains(err.Error(), "primary key") {
		t.Fatalf("two rows renewed: %v", err)
	}
}

// go-sql-driver's "invalid connection", a connection that broke after the
// request may have left, also matches io.ErrUnexpectedEOF, so that core
// counts the call's outcome as unknown; its text and the driver's error
// stay as they were.
func TestBrokenConnectionMayHaveRun(t *testing.T) {
	f := &fakeExec{exec: func(string) (sql.Result, error) { return nil, mysql.ErrInvalidConn }}
	s, _ := NewWithExecutor(f, SQLite)
	_, err := s.Release(context.Background(), "k", "o")
	if !errors.Is(err, io.ErrUnexpectedEOF) || !errors.Is(err, mysql.ErrInvalidConn) || err.Error() != "sqlstore: invalid connection" {
		t.Fatalf("Release on a broken connection: %v; want the driver's error, matching io.ErrUnexpectedEOF", err)
	}
}

// A Driver's name and placeholder style win over the caller's options, and
// its name is in the store's errors, whichever constructor it uses.
func TestDriverNamesItsStore(t *testing.T) {
	dr := Driver{Name: "xstore", Placeholder: Question}
	s, err := dr.New(&fakeExec{}, Postgres, WithName("other"), WithPlaceholder(Dollar), WithTable("t"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(s.String(), "xstore (PostgreSQL, table t)") || strings.Contains(s.st.renew.sql, "$") {
		t.Fatalf("store %q renewing with %q; want the driver's name, the caller's table and ? placeholders", s, s.st.renew.sql)
	}
	if _, err := dr.NewFromQuerier(nil, SQLite); !errors.Is(err, core.ErrInvalidArgument) || !strings.HasPrefix(err.Error(), "xstore: ") {
		t.Fatalf("NewFromQuerier(nil): %v; want an invalid argument named xstore", err)
	}
	if _, err := dr.New(nil, SQLite); !errors.Is(err, core.ErrInvalidArgument) || !strings.HasPrefix(err.Error(), "xstore: ") {
		t.Fatalf("New(nil): %v; want an invalid argument named xstore", err)
	}
}

// Migrate on SQLite reads whether the schema is all there and runs the
// schema statements only if not; when SQLite refuses the read or a
// statement with SQLITE_BUSY without waiting (as it refuses a new
// connection that meets another switching a new file to WAL mode), it does
// both again, up to schemaAttempts times, and never after another error.
func TestMigrateRetriesBusy(t *testing.T) {
	busy := errors.New("database is locked (5) (SQLITE_BUSY)")
	for _, tc := range []struct {
		name         string
		there        bool  // the read answers that the schema is all there
		readFailures int   // the reads that fail before one succeeds
		failures     int   // the schema statements that fail before one succeeds
		err          error // what they fail with
		wantErr      bool
		wantReads    int // reads run
		wantStmts    int // schema statements run
	}{
		{"schema there", true, 0, 0, nil, false, 1, 0},
		{"schema missing", false, 0, 0, nil, false, 1, 5},
		{"read busy", false, 2, 0, busy, false, 3, 5},
		{"read busy, schema there", true, 1, 0, busy, false, 2, 0},
		{"busy twice", false, 0, 2, busy, false, 3, 2 + 5},
		{"read busy for good", false, 100, 0, busy, true, schemaAttempts, 0},
		{"busy for good", false, 0, 100, busy, true, schemaAttempts, schemaAttempts},
		{"another error", false, 0, 100, errors.New("disk I/O error"), true, 1, 1},
		{"another error reading", false, 100, 0, errors.New("disk I/O error"), true, 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reads, readFailures, failures := 0, tc.readFailures, tc.failures
			f := &fakeExec{
				exec: func(string) (sql.Result, error) {
					if failures > 0 {
						failures--
						return nil, tc.err
					}
					return result{0, 0}, nil
				},
				query: func(_ string, scan func(Row) error) error {
					reads++
					if readFailures > 0 {
						readFailures--
						return tc.err
					}
					there := int64(0)
					if tc.there {
						there = 1
					}
					return scan(row{there})
				},
			}
			s, err := NewWithExecutor(f, SQLite)
			if err != nil {
				t.Fatal(err)
			}
			err = s.Migrate(context.Background())
			if gotErr := err != nil; gotErr != tc.wantErr || tc.wantErr && !errors.Is(err, tc.err) {
				t.Fatalf("Migrate = %v; want an error: %v (%v)", err, tc.wantErr, tc.err)
			}
			ran := 0
			for _, q := range f.stmts {
				if slices.Contains(s.Schema(), q) {
					ran++
				}
			}
			if reads != tc.wantReads || ran != tc.wantStmts {
				t.Errorf("ran %d reads and %d schema statements; want %d and %d", reads, ran, tc.wantReads, tc.wantStmts)
			}
		})
	}
}
