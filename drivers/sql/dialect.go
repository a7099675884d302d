package sqlstore

import (
	"fmt"
	"strings"

	"github.com/leasehold/leasehold/core"
)

// Dialect is the SQL of one database: its schema and the statements of each
// operation, written once with named parameters. [Store] holds the logic
// they share, and renders the statements in the placeholder style of the
// client that runs them. Use [Postgres], [MySQL] or [SQLite] (or
// [DialectNamed]); the zero Dialect is invalid.
type Dialect struct {
	name  string
	build func(table string) templates
	// placeholder is the style of the database's own drivers.
	placeholder Placeholder
	// txAcquire: acquire is the transaction ensure, lock, draw, take
	// (MySQL), not the one statement acquire.
	txAcquire bool
	// maxBatch is the most leases of one RenewBatch call: one statement's
	// worth (see batch.go).
	maxBatch int
	// batchHex: the batch statements read keys and owners as the hex of
	// their bytes (MySQL), not as JSON strings.
	batchHex bool
}

// String returns the dialect's name.
func (d Dialect) String() string { return d.name }

// templates are a dialect's statements, with {name} where a value goes.
type templates struct {
	schema []string
	// drop undoes schema, for down migrations.
	drop []string
	// migrateLock, if set, runs first in Migrate's transaction so that
	// concurrent migrations wait for each other.
	migrateLock string
	// migrated, if set, answers one row, one column: non-zero when every
	// object of schema exists, so that Migrate need not write (SQLite,
	// whose schema statements take the write lock even when they find
	// everything there).
	migrated string

	// acquire, one statement: returns one row (token, 0) when it acquired,
	// none when the key is held (SQLite), or (0, the milliseconds the
	// holder has left) (PostgreSQL).
	acquire string
	// left returns the milliseconds a live holder of the key has left,
	// read after a refused acquire (SQLite).
	left string

	// MySQL's acquire transaction, see mysqlTemplates.
	ensure, lock, draw, take string

	// renew and release affect one row when they succeed, none otherwise.
	renew, release string
	// releaseNotify, instead of release (PostgreSQL): one row, the number
	// of rows released, and a notification of the release.
	releaseNotify string
	// renewBatch renews the live leases of a JSON batch (see batchJSON) in
	// one statement and returns the key and owner of each row it renewed.
	// PostgreSQL and SQLite.
	renewBatch string
	// MySQL's batch, see mysqlTemplates: renewMarked renews the live
	// leases of a JSON batch and marks their rows; readMarked returns the
	// key and owner of each row of the batch with that mark.
	renewMarked, readMarked string
	// list returns key, owner, token and microseconds left of live locks.
	list string
	// resetTokens sends the token source back to zero.
	resetTokens string
}

// statements are a dialect's templates rendered for one placeholder style.
type statements struct {
	schema, drop                        []string
	migrateLock                         string
	migrated                            stmt
	acquire, left, ensure, lock, draw   stmt
	take, renew, release, releaseNotify stmt
	list, reset                         stmt
	renewBatch, renewMarked, readMarked stmt
}

func (t templates) render(p Placeholder) statements {
	r := func(s string) stmt {
		if s == "" {
			return stmt{}
		}
		return render(s, p)
	}
	return statements{
		schema: t.schema, drop: t.drop, migrateLock: t.migrateLock, migrated: r(t.migrated),
		acquire: r(t.acquire), left: r(t.left), ensure: r(t.ensure), lock: r(t.lock), draw: r(t.draw), take: r(t.take),
		renew: r(t.renew), release: r(t.release), releaseNotify: r(t.releaseNotify), list: r(t.list), reset: r(t.resetTokens),
		renewBatch: r(t.renewBatch), renewMarked: r(t.renewMarked), readMarked: r(t.readMarked),
	}
}

// Postgres is the dialect of PostgreSQL 11 and later (clock_timestamp, ON
// CONFLICT, starts_with). Every operation is one statement.
var Postgres = Dialect{name: "PostgreSQL", build: postgresTemplates, placeholder: Dollar, maxBatch: 1000}

// MySQL is the dialect of MySQL 8 and MariaDB 10.6 and later. Renew and
// Release are one statement; Acquire is a short transaction (see the
// package documentation), so the handle must be able to run one.
var MySQL = Dialect{name: "MySQL", build: mysqlTemplates, placeholder: Question, txAcquire: true, maxBatch: 1000, batchHex: true}

// SQLite is the dialect of SQLite 3.35 and later (UPSERT with RETURNING).
// Every operation is one statement.
var SQLite = Dialect{name: "SQLite", build: sqliteTemplates, placeholder: NumberedQuestion, maxBatch: 1000}

// DefaultTable is the name of the locks table unless [WithTable] says otherwise.
const DefaultTable = "leasehold_locks"

// maxTableName leaves room for the suffixes of the other objects
// (PostgreSQL truncates identifiers over 63 bytes, silently).
const maxTableName = 48

// checkTable accepts a plain identifier: ASCII letters, digits and
// underscores, not starting with a digit. It is quoted in every statement
// all the same, so a reserved word works too.
func checkTable(name string) error {
	if name == "" || len(name) > maxTableName {
		return fmt.Errorf("table name %q: want 1 to %d characters: %w", name, maxTableName, core.ErrInvalidArgument)
	}
	for i, c := range name {
		if c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || i > 0 && '0' <= c && c <= '9' {
			continue
		}
		return fmt.Errorf("table name %q: want a plain identifier (letters, digits, underscores; not starting with a digit): %w", name, core.ErrInvalidArgument)
	}
	return nil
}

// SchemaSQL returns the statements that create the schema of dialect d with
// locks table table (or [DefaultTable] if empty), for users who run their
// own migrations. They are the statements [Store.Migrate] runs, in order,
// and each is idempotent (IF NOT EXISTS).
func SchemaSQL(d Dialect, table string) ([]string, error) {
	t, err := d.templates(table)
	if err != nil {
		return nil, err
	}
	return t.schema, nil
}

// DropSQL returns the statements that remove the schema of dialect d with
// locks table table (or [DefaultTable] if empty), for down migrations. They
// drop every lock and every token floor: never run them while instances use
// the table.
func DropSQL(d Dialect, table string) ([]string, error) {
	t, err := d.templates(table)
	if err != nil {
		return nil, err
	}
	return t.drop, nil
}

func (d Dialect) templates(table string) (templates, error) {
	if d.build == nil {
		return templates{}, errZeroDialect
	}
	if table == "" {
		table = DefaultTable
	}
	if err := checkTable(table); err != nil {
		return templates{}, err
	}
	return d.build(table), nil
}

// DialectNamed returns the dialect of a database by the name its client
// uses for it: "postgres", "postgresql", "pgx" or "pg"; "mysql" (also
// MariaDB); "sqlite", "sqlite3". Drivers for ORMs use it with the ORM's
// own dialect name. Another name is an [*UnsupportedDialectError].
func DialectNamed(name string) (Dialect, error) {
	switch strings.ToLower(name) {
	case "postgres", "postgresql", "pgx", "pg":
		return Postgres, nil
	case "mysql", "mariadb":
		return MySQL, nil
	case "sqlite", "sqlite3":
		return SQLite, nil
	}
	return Dialect{}, &UnsupportedDialectError{Name: name}
}
