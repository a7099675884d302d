package entstore_test

import (
	"errors"
	"regexp"
	"slices"
	"strings"
	"testing"

	atlasmigrate "ariga.io/atlas/sql/migrate"
	atlasschema "ariga.io/atlas/sql/schema"
	"entgo.io/ent/dialect"

	"github.com/leasehold/leasehold/core"
	entstore "github.com/leasehold/leasehold/drivers/ent"
	sqlstore "github.com/leasehold/leasehold/drivers/sql"
)

var createTable = regexp.MustCompile("^CREATE TABLE IF NOT EXISTS [`\"]([^`\"]+)[`\"]")

// The schema's tables and statements are the engine's schema, split: every
// CREATE TABLE is a table of ent's, everything else a statement, in order.
func TestSchemaIsTheEnginesSchema(t *testing.T) {
	for _, c := range []struct {
		dialect string
		engine  sqlstore.Dialect
		kinds   []string // what ent cannot express
	}{
		{dialect.Postgres, sqlstore.Postgres, []string{"CREATE SEQUENCE"}},
		{dialect.MySQL, sqlstore.MySQL, []string{"INSERT INTO"}},
		{dialect.SQLite, sqlstore.SQLite, []string{"INSERT INTO", "CREATE TRIGGER", "CREATE TRIGGER"}},
	} {
		t.Run(c.dialect, func(t *testing.T) {
			locks, err := entstore.NewSchema(c.dialect, "app_locks")
			if err != nil {
				t.Fatal(err)
			}
			create, err := sqlstore.SchemaSQL(c.engine, "app_locks")
			if err != nil {
				t.Fatal(err)
			}
			var tables, rest []string
			for _, q := range create {
				if m := createTable.FindStringSubmatch(q); m != nil {
					tables = append(tables, m[1])
				} else {
					rest = append(rest, q)
				}
			}
			var names []string
			for _, tb := range locks.Tables() {
				names = append(names, tb.Name)
			}
			if !slices.Equal(names, tables) {
				t.Errorf("Tables() = %q; want the engine's tables %q", names, tables)
			}
			if got := locks.Statements(); !slices.Equal(got, rest) {
				t.Errorf("Statements() = %q; want the engine's other statements %q", got, rest)
			}
			var kinds []string
			for _, q := range locks.Statements() {
				f := strings.Fields(q)
				kinds = append(kinds, f[0]+" "+f[1])
			}
			if !slices.Equal(kinds, c.kinds) {
				t.Errorf("Statements() are %q; want %q", kinds, c.kinds)
			}
			if locks.Tables()[0] == locks.Tables()[0] {
				t.Error("Tables() returns the same tables twice; ent's migration changes them as it goes")
			}
		})
	}
}

func TestNewSchemaRefuses(t *testing.T) {
	var unsupported *sqlstore.UnsupportedDialectError
	if _, err := entstore.NewSchema(dialect.Gremlin, ""); !errors.As(err, &unsupported) {
		t.Errorf("NewSchema(gremlin) = %v; want a *sqlstore.UnsupportedDialectError", err)
	}
	if _, err := entstore.NewSchema(dialect.Postgres, "1locks"); !errors.Is(err, core.ErrInvalidArgument) {
		t.Errorf("NewSchema(postgres, 1locks) = %v; want an error matching core.ErrInvalidArgument", err)
	}
	locks, err := entstore.NewSchema(dialect.Postgres, "")
	if err != nil || locks.Table() != sqlstore.DefaultTable {
		t.Errorf("NewSchema(postgres, \"\") = %v, %v; want the default table %s", locks, err, sqlstore.DefaultTable)
	}
}

// capture is a formatter that keeps the plan it was given.
type capture struct{ plan *atlasmigrate.Plan }

func (c *capture) Format(p *atlasmigrate.Plan) ([]atlasmigrate.File, error) {
	c.plan = p
	return nil, nil
}

func TestFormatter(t *testing.T) {
	locks, err := entstore.NewSchema(dialect.Postgres, "")
	if err != nil {
		t.Fatal(err)
	}
	plan := func(table string) *atlasmigrate.Plan {
		return &atlasmigrate.Plan{Name: "m", Changes: []*atlasmigrate.Change{{
			Cmd:    `CREATE TABLE "` + table + `" ()`,
			Source: &atlasschema.AddTable{T: atlasschema.NewTable(table)},
		}}}
	}
	var next capture

	later := plan("invoices")
	if _, err := locks.Formatter(&next).Format(later); err != nil {
		t.Fatal(err)
	}
	if next.plan != later {
		t.Errorf("a plan that does not create leasehold's tables reached the formatter as %+v; want it unchanged", next.plan)
	}

	first := plan(sqlstore.DefaultTable)
	if _, err := locks.Formatter(&next).Format(first); err != nil {
		t.Fatal(err)
	}
	if len(first.Changes) != 1 {
		t.Errorf("Format changed the plan it was given: %d changes", len(first.Changes))
	}
	var cmds []string
	for _, c := range next.plan.Changes {
		cmds = append(cmds, c.Cmd)
	}
	if want := slices.Concat([]string{first.Changes[0].Cmd}, locks.Statements()); !slices.Equal(cmds, want) {
		t.Errorf("the formatter got %q; want the table, then %q", cmds, locks.Statements())
	}
	drop, _ := sqlstore.DropSQL(sqlstore.Postgres, "")
	if got := next.plan.Changes[1].Reverse; !slices.Equal(got.([]string), drop[1:]) {
		t.Errorf("the statements' down migration is %q; want %q", got, drop[1:])
	}

	// nil is Atlas's default format.
	files, err := locks.Formatter(nil).Format(first)
	if err != nil || len(files) != 1 || !strings.Contains(string(files[0].Bytes()), locks.Statements()[0]) {
		t.Errorf("Formatter(nil) = %v, %v; want one file with %q", files, err, locks.Statements()[0])
	}
}
