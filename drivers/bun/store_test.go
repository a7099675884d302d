package bunstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
	"github.com/uptrace/bun/migrate"
	"github.com/uptrace/bun/schema"

	"github.com/leasehold/leasehold/core"
	sqlstore "github.com/leasehold/leasehold/drivers/sql"
)

// namedDB is a bun.IDB of which New may only ask the dialect's name: any
// other call panics on the nil embedded interfaces.
type namedDB struct {
	bun.IDB
	name dialect.Name
}

func (db namedDB) Dialect() schema.Dialect { return namedDialect{name: db.name} }

type namedDialect struct {
	schema.Dialect
	name dialect.Name
}

func (d namedDialect) Name() dialect.Name { return d.name }

func TestNewTakesTheDialectFromBun(t *testing.T) {
	for _, c := range []struct {
		name dialect.Name
		want sqlstore.Dialect
	}{
		{dialect.PG, sqlstore.Postgres},
		{dialect.MySQL, sqlstore.MySQL},
		{dialect.SQLite, sqlstore.SQLite},
	} {
		s, err := New(namedDB{name: c.name}, sqlstore.WithTable("locks"))
		if err != nil {
			t.Fatalf("%v: %v", c.name, err)
		}
		if s.Dialect().String() != c.want.String() || s.Table() != "locks" {
			t.Errorf("%v: dialect %v, table %s; want %v, locks", c.name, s.Dialect(), s.Table(), c.want)
		}
		if got, want := s.String(), "bunstore ("+c.want.String()+", table locks)"; got != want {
			t.Errorf("String() = %q, want %q", got, want)
		}
	}
}

func TestNewRefusesAnUnsupportedDialect(t *testing.T) {
	for _, n := range []dialect.Name{dialect.MSSQL, dialect.Oracle, dialect.Invalid} {
		_, err := New(namedDB{name: n})
		var ue *sqlstore.UnsupportedDialectError
		if !errors.As(err, &ue) || ue.Name != n.String() || !errors.Is(err, core.ErrInvalidArgument) {
			t.Errorf("New(%v dialect) = %v; want an *UnsupportedDialectError for %q matching core.ErrInvalidArgument", n, err, n)
		}
		if err != nil && !strings.HasPrefix(err.Error(), "bunstore: ") {
			t.Errorf("error %q lacks the package's prefix", err)
		}
	}
}

func TestNewRefusesTransactions(t *testing.T) {
	for _, db := range []bun.IDB{bun.Tx{}, &bun.Tx{}} {
		if _, err := New(db); !errors.Is(err, sqlstore.ErrTransaction) || !errors.Is(err, core.ErrInvalidArgument) {
			t.Errorf("New(%T) = %v; want an error matching sqlstore.ErrTransaction", db, err)
		}
	}
}

func TestNewRefusesNil(t *testing.T) {
	for _, db := range []bun.IDB{nil, (*bun.DB)(nil), (*bun.Conn)(nil)} {
		if _, err := New(db); !errors.Is(err, core.ErrInvalidArgument) {
			t.Errorf("New(%#v) = %v; want core.ErrInvalidArgument", db, err)
		}
	}
}

// TestNewKeepsItsPlaceholders: a caller's WithPlaceholder would send the
// engine's statements with $1 or ?1, which bun does not fill in.
func TestNewKeepsItsPlaceholders(t *testing.T) {
	db := &recordingDB{namedDB: namedDB{name: dialect.PG}}
	s, err := New(db, sqlstore.WithPlaceholder(sqlstore.Dollar), sqlstore.WithName("other"))
	if err != nil {
		t.Fatal(err)
	}
	s.Renew(t.Context(), "k", "o", 1000) //nolint:errcheck // the statement is what counts
	if len(db.queries) != 1 || strings.Contains(db.queries[0], "$") || !strings.Contains(db.queries[0], "?") {
		t.Fatalf("queries %q; want one statement with ? placeholders", db.queries)
	}
	if !strings.HasPrefix(s.String(), "bunstore ") {
		t.Errorf("String() = %q; want the bunstore prefix", s.String())
	}
}

// recordingDB records the statements it is asked to run, and fails them.
type recordingDB struct {
	namedDB
	queries []string
	args    [][]any
}

var errNoDatabase = errors.New("recordingDB: no database")

func (db *recordingDB) ExecContext(_ context.Context, query string, args ...any) (sql.Result, error) {
	db.queries = append(db.queries, query)
	db.args = append(db.args, args)
	return nil, errNoDatabase
}

func (db *recordingDB) QueryContext(_ context.Context, query string, args ...any) (*sql.Rows, error) {
	db.queries = append(db.queries, query)
	db.args = append(db.args, args)
	return nil, errNoDatabase
}

func TestArgumentsAreLiteralsOfTheDialect(t *testing.T) {
	for _, c := range []struct {
		name dialect.Name
		want any
	}{
		{dialect.PG, pgString("k'ey")},
		{dialect.MySQL, []byte("k'ey")},
		{dialect.SQLite, "k'ey"},
	} {
		db := &recordingDB{namedDB: namedDB{name: c.name}}
		s, err := New(db)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Renew(t.Context(), "k'ey", "k'ey", 1500); !errors.Is(err, errNoDatabase) {
			t.Fatalf("%v: Renew: %v; want the database's error", c.name, err)
		}
		if len(db.args) != 1 {
			t.Fatalf("%v: %d statements, want 1", c.name, len(db.args))
		}
		var strs int
		for _, a := range db.args[0] {
			switch a.(type) {
			case int64:
			default:
				strs++
				if !reflect.DeepEqual(a, c.want) {
					t.Errorf("%v: argument %#v, want %#v", c.name, a, c.want)
				}
			}
		}
		if strs != 2 {
			t.Errorf("%v: %d string arguments in %#v, want key and owner", c.name, strs, db.args[0])
		}
	}
}

// TestRefusesWhatBunWouldChange: bun drops NUL bytes and writes U+FFFD for
// invalid UTF-8, so such a key would lock another key. Core refuses them
// too; a Store called directly must not send them either.
func TestRefusesWhatBunWouldChange(t *testing.T) {
	for _, n := range []dialect.Name{dialect.PG, dialect.MySQL, dialect.SQLite} {
		db := &recordingDB{namedDB: namedDB{name: n}}
		s, err := New(db)
		if err != nil {
			t.Fatal(err)
		}
		for _, bad := range []string{"a\x00b", "\x00", "a\xffb", "\xc3"} {
			calls := []func() error{
				func() error { _, err := s.Renew(t.Context(), bad, "o", 1000); return err },
				func() error { _, err := s.Release(t.Context(), "k", bad); return err },
				func() error { _, err := s.List(t.Context(), bad); return err },
			}
			if n != dialect.MySQL { // MySQL's acquire begins a transaction, see the integration tests
				calls = append(calls, func() error { _, _, err := s.Acquire(t.Context(), bad, "o", 1000); return err })
			}
			for _, call := range calls {
				if err := call(); !errors.Is(err, core.ErrInvalidArgument) {
					t.Errorf("%v, %q: %v; want core.ErrInvalidArgument", n, bad, err)
				}
			}
		}
		if len(db.queries) != 0 {
			t.Errorf("%v: statements sent: %q", n, db.queries)
		}
	}
}

func TestPgStringIsAnEscapeString(t *testing.T) {
	for in, want := range map[string]string{
		"":                 `E''`,
		"key":              `E'key'`,
		`it's`:             `E'it''s'`,
		`a\b`:              `E'a\\b'`,
		`\'`:               `E'\\'''`,
		"?0 $1 %_ \n\t😀 é": "E'?0 $1 %_ \n\t😀 é'",
	} {
		b, err := pgString(in).AppendQuery(schema.QueryGen{}, []byte("x="))
		if err != nil || string(b) != "x="+want {
			t.Errorf("pgString(%q) = %q, %v; want %q", in, b, err, "x="+want)
		}
	}
}

// fieldError is an error with its SQLSTATE in a field, as bun's pgdriver
// reports them.
type fieldError map[byte]string

func (e fieldError) Error() string       { return e['M'] }
func (e fieldError) Field(k byte) string { return e[k] }

func TestSQLStateFromAField(t *testing.T) {
	err := withSQLState(fmt.Errorf("query: %w", fieldError{'C': "42P01", 'M': "relation does not exist"}))
	var se interface{ SQLState() string }
	if !errors.As(err, &se) || se.SQLState() != "42P01" {
		t.Fatalf("withSQLState: %v has no SQLState 42P01", err)
	}
	var fe fieldError
	if !errors.As(err, &fe) || err.Error() != "query: relation does not exist" {
		t.Errorf("withSQLState hides the driver's error: %v", err)
	}
	plain := errors.New("plain")
	if withSQLState(plain) != plain || withSQLState(nil) != nil {
		t.Error("withSQLState changes an error without a SQLSTATE field")
	}
}

func TestRegisterMigrationChecksItsArguments(t *testing.T) {
	if err := RegisterMigration(nil, "1"); !errors.Is(err, core.ErrInvalidArgument) {
		t.Errorf("nil migrations: %v", err)
	}
	ms := migrate.NewMigrations()
	for _, name := range []string{"", "locks", "2025_locks", "123456789012345", "１"} {
		if err := RegisterMigration(ms, name); !errors.Is(err, core.ErrInvalidArgument) {
			t.Errorf("name %q: %v; want core.ErrInvalidArgument", name, err)
		}
	}
	if err := RegisterMigration(ms, "20250601120000"); err != nil {
		t.Fatal(err)
	}
	sorted := ms.Sorted()
	if len(sorted) != 1 || sorted[0].Name != "20250601120000" || sorted[0].Up == nil || sorted[0].Down == nil {
		t.Errorf("registered %+v; want one migration 20250601120000 with up and down", sorted)
	}
}
