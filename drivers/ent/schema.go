package entstore

import (
	"context"
	"fmt"
	"slices"
	"strings"

	atlasmigrate "ariga.io/atlas/sql/migrate"
	atlasschema "ariga.io/atlas/sql/schema"
	"ariga.io/atlas/sql/sqlite"
	"entgo.io/ent/dialect"
	"entgo.io/ent/dialect/entsql"
	"entgo.io/ent/dialect/sql/schema"
	"entgo.io/ent/schema/field"

	sqlstore "github.com/leasehold/leasehold/drivers/sql"
)

// Schema is leasehold's schema in the terms of ent's migration engine, for
// one dialect and locks table: the tables, which ent creates and diffs like
// the application's own, and the statements ent cannot express, which it
// runs or writes after them. The objects are exactly those of
// [sqlstore.SchemaSQL]:
//
//   - PostgreSQL: the locks table (lock_key text COLLATE "C"), and the
//     sequence <table>_token_seq, a statement;
//   - MySQL and MariaDB: the locks table (lock_key VARBINARY(2000)) and the
//     counter table <table>_counter, and the counter's row, a statement;
//   - SQLite: the locks table and the counter table, and the counter's row
//     and the triggers <table>_token_insert and <table>_token_update,
//     statements.
//
// Add it to ent's automatic migration with [Schema.MigrateOption], or to a
// versioned migration with [Schema.Tables] and [Schema.Formatter].
type Schema struct {
	dialect string // ent's name of the dialect
	table   string
	// extra are the statements of the schema that are not its tables, and
	// undo the drop statements that are not DROP TABLE.
	extra, undo []string
}

// NewSchema returns leasehold's schema for dialectName (dialect.Postgres,
// dialect.MySQL or dialect.SQLite) with locks table table (or
// [sqlstore.DefaultTable] if empty): the same table name as the store's
// [sqlstore.WithTable]. Another dialect is an
// [*sqlstore.UnsupportedDialectError].
func NewSchema(dialectName, table string) (*Schema, error) {
	d, err := sqlstore.DialectNamed(dialectName)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if table == "" {
		table = sqlstore.DefaultTable
	}
	create, err := sqlstore.SchemaSQL(d, table)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	drop, err := sqlstore.DropSQL(d, table)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	s := &Schema{table: table}
	switch d.String() {
	case sqlstore.Postgres.String():
		s.dialect = dialect.Postgres
	case sqlstore.MySQL.String():
		s.dialect = dialect.MySQL
	default:
		s.dialect = dialect.SQLite
	}
	// The tables are Tables' business; the rest is what ent cannot say.
	notTables := func(stmts []string, prefix string) []string {
		return slices.DeleteFunc(slices.Clone(stmts), func(q string) bool { return strings.HasPrefix(q, prefix) })
	}
	s.extra = notTables(create, "CREATE TABLE ")
	s.undo = notTables(drop, "DROP TABLE ")
	return s, nil
}

// Table returns the name of the locks table.
func (s *Schema) Table() string { return s.table }

// counterTable is the name of the MySQL and SQLite token counter's table.
func (s *Schema) counterTable() string { return s.table + "_counter" }

// Tables returns the schema's tables in ent's terms, new on each call, for
// the tables argument of ent's migrations (migrate.Create, schema.Diff):
//
//	tables := slices.Concat(migrate.Tables, locks.Tables())
//
// Their columns have the types the SQL engine's statements need on the
// dialect, so that ent creates the tables the engine would, and finds
// nothing to change in tables the engine created.
func (s *Schema) Tables() []*schema.Table {
	switch s.dialect {
	case dialect.Postgres:
		return []*schema.Table{s.postgresLocks()}
	case dialect.MySQL:
		return s.mysqlTables()
	}
	return s.sqliteTables()
}

// column returns a column of SQL type sqlType on the schema's dialect;
// typ is ent's nearest field type.
func (s *Schema) column(name string, typ field.Type, sqlType string) *schema.Column {
	return &schema.Column{Name: name, Type: typ, SchemaType: map[string]string{s.dialect: sqlType}}
}

func nullable(c *schema.Column) *schema.Column { c.Nullable = true; return c }

func (s *Schema) postgresLocks() *schema.Table {
	key := s.column("lock_key", field.TypeString, "text")
	key.Collation = "C" // byte order, no folding
	return schema.NewTable(s.table).
		AddPrimary(key).
		AddColumn(nullable(s.column("owner", field.TypeString, "text"))).
		AddColumn(s.column("token", field.TypeInt64, "bigint")).
		AddColumn(s.column("expires_at", field.TypeTime, "timestamptz"))
}

func (s *Schema) mysqlTables() []*schema.Table {
	innoDB := &entsql.Annotation{Options: "ENGINE=InnoDB"}
	version := s.column("version", field.TypeInt64, "bigint")
	version.Default = 0
	locks := schema.NewTable(s.table).
		AddPrimary(s.column("lock_key", field.TypeBytes, "varbinary(2000)")).
		AddColumn(nullable(s.column("owner", field.TypeBytes, "varbinary(2000)"))).
		AddColumn(s.column("token", field.TypeInt64, "bigint")).
		AddColumn(s.column("expires_at", field.TypeTime, "datetime(6)")).
		AddColumn(version).
		SetAnnotation(innoDB)
	counter := schema.NewTable(s.counterTable()).
		AddPrimary(s.column("id", field.TypeInt8, "tinyint")).
		AddColumn(s.column("n", field.TypeInt64, "bigint")).
		SetAnnotation(innoDB)
	return []*schema.Table{locks, counter}
}

func (s *Schema) sqliteTables() []*schema.Table {
	locks := schema.NewTable(s.table).
		AddPrimary(s.column("lock_key", field.TypeString, "text")).
		AddColumn(nullable(s.column("owner", field.TypeString, "text"))).
		AddColumn(s.column("token", field.TypeInt64, "integer")).
		AddColumn(s.column("expires_at", field.TypeInt64, "integer"))
	counter := schema.NewTable(s.counterTable()).
		AddPrimary(s.column("id", field.TypeInt64, "integer")).
		AddColumn(s.column("n", field.TypeInt64, "integer")).
		SetAnnotation(&entsql.Annotation{Check: "id = 1"})
	return []*schema.Table{locks, counter}
}

// Statements returns the statements of the schema that ent cannot
// express, in the order they run, after the tables exist. Each is
// idempotent. [Schema.MigrateOption] and [Schema.Formatter] add them for
// you; write them yourself only in migration files you write by hand.
func (s *Schema) Statements() []string { return slices.Clone(s.extra) }

// MigrateOption returns the option that adds the schema to ent's automatic
// migration:
//
//	err := client.Schema.Create(ctx, locks.MigrateOption())
//
// It adds [Schema.Tables] to the tables ent migrates (unless they are
// there already), and when ent's plan creates them, it runs
// [Schema.Statements] after them, in the same transaction where the
// database has transactional DDL (PostgreSQL, SQLite). It also tells ent's
// differ the two things a table of ent cannot say, so that ent finds
// nothing to change in the tables [sqlstore.Store.Migrate] created: on
// SQLite the locks table is WITHOUT ROWID, and on MySQL the tables keep the
// character set they have (no column of theirs holds text; ent would set
// utf8mb4 on them). On a database whose tables exist, it changes nothing.
//
// Pass it to versioned migrations (schema.Diff) too, with the tables and
// [Schema.Formatter]: there ent does not run its create and apply hooks,
// only the differ's.
func (s *Schema) MigrateOption() schema.MigrateOption {
	return func(a *schema.Atlas) {
		schema.WithHooks(s.addTables)(a)
		schema.WithDiffHook(s.declare)(a)
		schema.WithApplyHook(s.applyStatements)(a)
	}
}

// declare is the diff hook of MigrateOption.
func (s *Schema) declare(next schema.Differ) schema.Differ {
	return schema.DiffFunc(func(current, desired *atlasschema.Schema) ([]atlasschema.Change, error) {
		switch s.dialect {
		case dialect.SQLite:
			// Without it, Atlas would rebuild the engine's table, and lose
			// its triggers on the way.
			if t, ok := desired.Table(s.table); ok {
				atlasschema.ReplaceOrAppend(&t.Attrs, &sqlite.WithoutRowID{})
			}
		case dialect.MySQL:
			for _, name := range []string{s.table, s.counterTable()} {
				have, ok := current.Table(name)
				want, ok2 := desired.Table(name)
				if !ok || !ok2 {
					continue
				}
				want.Attrs = atlasschema.RemoveAttr[*atlasschema.Collation](atlasschema.RemoveAttr[*atlasschema.Charset](want.Attrs))
				for _, a := range have.Attrs {
					switch a.(type) {
					case *atlasschema.Charset, *atlasschema.Collation:
						want.Attrs = append(want.Attrs, a)
					}
				}
			}
		}
		return next.Diff(current, desired)
	})
}

// addTables is the create hook of MigrateOption.
func (s *Schema) addTables(next schema.Creator) schema.Creator {
	return schema.CreateFunc(func(ctx context.Context, tables ...*schema.Table) error {
		for _, t := range s.Tables() {
			if !slices.ContainsFunc(tables, func(u *schema.Table) bool { return u.Name == t.Name }) {
				tables = append(tables, t)
			}
		}
		return next.Create(ctx, tables...)
	})
}

// applyStatements is the apply hook of MigrateOption.
func (s *Schema) applyStatements(next schema.Applier) schema.Applier {
	return schema.ApplyFunc(func(ctx context.Context, conn dialect.ExecQuerier, plan *atlasmigrate.Plan) error {
		return next.Apply(ctx, conn, s.withStatements(plan))
	})
}

// Formatter returns a formatter of versioned migration files that writes
// [Schema.Statements] after the statements that create the schema's
// tables, in the same file, and formats everything with next (or
// [atlasmigrate.DefaultFormatter] if nil). Pass it to ent's versioned
// migration with the tables and [Schema.MigrateOption]:
//
//	err := schema.Diff(ctx, devURL, name, slices.Concat(migrate.Tables, locks.Tables()),
//		schema.WithDir(dir), schema.WithFormatter(locks.Formatter(atlasmigrate.DefaultFormatter)),
//		locks.MigrateOption())
//
// The plans of later migrations, which do not create the tables, are
// formatted by next unchanged. Formats that write down migrations get the
// statements that drop what [Schema.Statements] created.
func (s *Schema) Formatter(next atlasmigrate.Formatter) atlasmigrate.Formatter {
	if next == nil {
		next = atlasmigrate.DefaultFormatter
	}
	return formatFunc(func(plan *atlasmigrate.Plan) ([]atlasmigrate.File, error) {
		return next.Format(s.withStatements(plan))
	})
}

type formatFunc func(*atlasmigrate.Plan) ([]atlasmigrate.File, error)

func (f formatFunc) Format(p *atlasmigrate.Plan) ([]atlasmigrate.File, error) { return f(p) }

// withStatements returns plan, or a copy of it with the schema's
// statements after its changes if it creates the schema's tables.
func (s *Schema) withStatements(plan *atlasmigrate.Plan) *atlasmigrate.Plan {
	creates := slices.ContainsFunc(plan.Changes, func(c *atlasmigrate.Change) bool {
		add, ok := c.Source.(*atlasschema.AddTable)
		return ok && (add.T.Name == s.table || add.T.Name == s.counterTable())
	})
	if !creates || len(s.extra) == 0 {
		return plan
	}
	p := *plan
	p.Changes = slices.Clone(plan.Changes)
	for i, q := range s.extra {
		c := &atlasmigrate.Change{Cmd: q, Comment: fmt.Sprintf("leasehold: statements ent cannot express for table %q (%d of %d)", s.table, i+1, len(s.extra))}
		if i == 0 && len(s.undo) > 0 {
			c.Reverse = s.undo
		}
		p.Changes = append(p.Changes, c)
	}
	return &p
}
