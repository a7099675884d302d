package entstore_test

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"entgo.io/ent/dialect"
	entsql "entgo.io/ent/dialect/sql"

	"github.com/leasehold/leasehold/core"
	entstore "github.com/leasehold/leasehold/drivers/ent"
	sqlstore "github.com/leasehold/leasehold/drivers/sql"
)

func TestNewRefusesTransactions(t *testing.T) {
	pg := fakeDriver{dialect: dialect.Postgres}
	for name, drv := range map[string]dialect.Driver{
		"dialect.NopTx":             dialect.NopTx(pg).(dialect.Driver),
		"a client's tx driver":      txDriver{pg},
		"Debug of a tx driver":      dialect.Debug(txDriver{pg}),
		"ent's driver over *sql.Tx": entsql.NewDriver(dialect.Postgres, entsql.Conn{ExecQuerier: &sql.Tx{}}),
		"Debug of that":             dialect.Debug(entsql.NewDriver(dialect.Postgres, entsql.Conn{ExecQuerier: &sql.Tx{}})),
	} {
		t.Run(name, func(t *testing.T) {
			_, err := entstore.New(drv)
			if !errors.Is(err, sqlstore.ErrTransaction) || !errors.Is(err, core.ErrInvalidArgument) {
				t.Fatalf("New = %v; want an error matching sqlstore.ErrTransaction and core.ErrInvalidArgument", err)
			}
		})
	}
}

func TestNewRefusesBadDrivers(t *testing.T) {
	for name, drv := range map[string]dialect.Driver{
		"nil":                   nil,
		"nil *entsql.Driver":    (*entsql.Driver)(nil),
		"nil *DebugDriver":      (*dialect.DebugDriver)(nil),
		"ent's driver, no pool": entsql.NewDriver(dialect.Postgres, entsql.Conn{}),
		"gremlin":               fakeDriver{dialect: dialect.Gremlin},
		// MySQL's acquire is a transaction, and ent's driver begins them
		// on a *sql.DB only.
		"MySQL over a *sql.Conn": entsql.NewDriver(dialect.MySQL, entsql.Conn{ExecQuerier: &sql.Conn{}}),
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := entstore.New(drv); !errors.Is(err, core.ErrInvalidArgument) {
				t.Fatalf("New = %v; want an error matching core.ErrInvalidArgument", err)
			}
		})
	}
	var unsupported *sqlstore.UnsupportedDialectError
	if _, err := entstore.New(fakeDriver{dialect: dialect.Gremlin}); !errors.As(err, &unsupported) || unsupported.Name != dialect.Gremlin {
		t.Errorf("New(gremlin) = %v; want a *sqlstore.UnsupportedDialectError naming gremlin", err)
	}
}

// A driver that cannot begin transactions serves the dialects that need
// none for locks; Migrate on PostgreSQL, which serialises in one, says so.
func TestNewWithoutTransactions(t *testing.T) {
	store, err := entstore.New(entsql.NewDriver(dialect.Postgres, entsql.Conn{ExecQuerier: &sql.Conn{}}))
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Migrate(context.Background()); err == nil || !strings.Contains(err.Error(), "cannot begin") {
		t.Fatalf("Migrate = %v; want an error saying the driver cannot begin a transaction", err)
	}
}

func TestString(t *testing.T) {
	for _, c := range []struct {
		drv  dialect.Driver
		opts []sqlstore.Option
		want string
	}{
		{fakeDriver{dialect: dialect.Postgres}, nil, "entstore (PostgreSQL, table leasehold_locks)"},
		{dialect.Debug(fakeDriver{dialect: dialect.MySQL}), nil, "entstore (MySQL, table leasehold_locks)"},
		{fakeDriver{dialect: dialect.SQLite}, []sqlstore.Option{sqlstore.WithTable("app_locks")}, "entstore (SQLite, table app_locks)"},
	} {
		store, err := entstore.New(c.drv, c.opts...)
		if err != nil {
			t.Fatal(err)
		}
		if got := store.String(); got != c.want {
			t.Errorf("String() = %q, want %q", got, c.want)
		}
	}
}

func TestStatementsGoThroughTheDriver(t *testing.T) {
	ctx := context.Background()
	var log []string
	drv := fakeDriver{dialect: dialect.Postgres, log: &log,
		query: func(q string, args []any, rows *entsql.Rows) error {
			if strings.Contains(q, "pg_notify") { // the release: one row, its count
				rows.ColumnScanner = &fakeRows{rows: [][]any{{int64(1)}}}
				return nil
			}
			if !slices.Equal(args, []any{"k", "o", int64(1500)}) {
				t.Errorf("acquire's args = %v, want key, owner and ttl in milliseconds", args)
			}
			rows.ColumnScanner = &fakeRows{rows: [][]any{{int64(7), int64(0)}}}
			return nil
		},
		exec: func(_ string, _ []any, res *sql.Result) error {
			*res = result{affected: 1}
			return nil
		},
	}
	store, err := entstore.New(drv)
	if err != nil {
		t.Fatal(err)
	}
	token, ok, err := store.Acquire(ctx, "k", "o", 1500*time.Millisecond)
	if token != 7 || !ok || err != nil {
		t.Errorf("Acquire = %d, %v, %v; want 7, true, nil", token, ok, err)
	}
	if ok, err := store.Release(ctx, "k", "o"); !ok || err != nil {
		t.Errorf("Release = %v, %v; want true, nil", ok, err)
	}
	if len(log) != 2 || !strings.HasPrefix(log[0], "query WITH a AS (\nINSERT") || !strings.HasPrefix(log[1], "query WITH r AS (\nUPDATE") {
		t.Errorf("the driver got %q; want the acquire query, then the release query (which notifies)", log)
	}
	if strings.Contains(log[0], "?") || !strings.Contains(log[0], "$1") {
		t.Errorf("acquire on PostgreSQL = %q; want PostgreSQL's placeholders", log[0])
	}
}

// What a driver gets wrong is an error of the store, never a panic or a
// "not acquired".
func TestDriverFailures(t *testing.T) {
	ctx := context.Background()
	boom := errors.New("boom")
	for name, c := range map[string]struct {
		drv  fakeDriver
		want error
	}{
		"exec fails":           {fakeDriver{exec: func(string, []any, *sql.Result) error { return boom }}, boom},
		"exec gives no result": {fakeDriver{}, nil},
		"query fails":          {fakeDriver{query: func(string, []any, *entsql.Rows) error { return boom }}, boom},
		"query gives no rows":  {fakeDriver{}, nil},
		"error after the last row": {fakeDriver{query: func(_ string, _ []any, rows *entsql.Rows) error {
			rows.ColumnScanner = &fakeRows{rows: [][]any{{int64(7), int64(0)}}, err: boom}
			return nil
		}}, boom},
		"error from closing the rows": {fakeDriver{query: func(_ string, _ []any, rows *entsql.Rows) error {
			rows.ColumnScanner = &fakeRows{rows: [][]any{{int64(7), int64(0)}}, closeErr: boom}
			return nil
		}}, boom},
	} {
		t.Run(name, func(t *testing.T) {
			c.drv.dialect = dialect.Postgres
			store, err := entstore.New(c.drv)
			if err != nil {
				t.Fatal(err)
			}
			var got error
			if strings.HasPrefix(name, "exec") {
				_, got = store.Renew(ctx, "k", "o", time.Second)
			} else {
				_, _, got = store.Acquire(ctx, "k", "o", time.Second)
			}
			if got == nil || !strings.HasPrefix(got.Error(), "entstore: ") || c.want != nil && !errors.Is(got, c.want) {
				t.Fatalf("got %v; want an entstore error (wrapping %v)", got, c.want)
			}
		})
	}
}

// MySQL's acquire is a transaction of the driver's: committed when it
// takes the key, rolled back when a live lock holds it.
func TestMySQLAcquireInTheDriversTransaction(t *testing.T) {
	for _, c := range []struct {
		live      int64
		wantToken int64
		wantOK    bool
		want      []string
	}{
		{0, 42, true, []string{"begin", "exec", "query", "exec", "exec", "commit"}},
		{1, 0, false, []string{"begin", "exec", "query", "rollback"}},
	} {
		var log []string
		drv := fakeDriver{dialect: dialect.MySQL, log: &log,
			query: func(_ string, _ []any, rows *entsql.Rows) error {
				rows.ColumnScanner = &fakeRows{rows: [][]any{{int64(41), c.live, int64(0)}}}
				return nil
			},
			exec: func(_ string, args []any, res *sql.Result) error {
				*res = result{affected: 1, lastID: 42}
				return nil
			},
		}
		store, err := entstore.New(drv)
		if err != nil {
			t.Fatal(err)
		}
		token, ok, err := store.Acquire(context.Background(), "k", "o", time.Second)
		if token != c.wantToken || ok != c.wantOK || err != nil {
			t.Errorf("live=%d: Acquire = %d, %v, %v; want %d, %v, nil", c.live, token, ok, err, c.wantToken, c.wantOK)
		}
		var kinds []string
		for _, l := range log {
			kinds = append(kinds, strings.Fields(l)[0])
		}
		if !slices.Equal(kinds, c.want) {
			t.Errorf("live=%d: the driver got %q; want %q", c.live, kinds, c.want)
		}
	}
}
