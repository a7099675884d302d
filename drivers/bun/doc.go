// Package bunstore keeps leasehold's locks in a table of the application's
// own database, through its bun (github.com/uptrace/bun) handle: PostgreSQL,
// MySQL 8 / MariaDB 10.6+ or SQLite 3.35+.
//
// Import it as
//
//	import bunstore "github.com/leasehold/leasehold/drivers/bun"
//
// The package is named bunstore, not bun, so that it never clashes with
// github.com/uptrace/bun, which the same file usually imports.
//
// [New] takes the *bun.DB (or a bun.Conn) the application already has and
// reads the dialect from it. The statements, and how each operation is
// atomic, are those of the SQL engine (package sqlstore,
// github.com/leasehold/leasehold/drivers/sql); this package runs them
// through bun's ExecContext, QueryContext and RunInTx, so bun's query hooks
// (bundebug, bunotel, your own bun.QueryHook) see every lock statement like
// any other query. Create the table with [Store.Migrate], with bun's migrate
// package ([RegisterMigration], [MigrationFuncs]), or with the statements of
// [Store.Schema] in any other tool.
//
// # Arguments are formatted on the client
//
// bun sends no bind parameters: it writes every argument into the SQL text
// as a literal, and the server parses it back. The contract requires keys
// (and owners) to reach the database byte for byte, so this driver makes
// sure every literal reads back as exactly the string it came from,
// whatever the session's settings:
//
//   - PostgreSQL: an escape string, E'...', with quotes and backslashes
//     doubled. It means the same with standard_conforming_strings on or off
//     (bun's plain '...' would not: with it off, 'a\b' is "a" and a
//     backspace, one lock for two keys).
//   - MySQL and MariaDB: the key's bytes, which bun writes as a hex literal,
//     X'...', for the VARBINARY columns. It means the same under any
//     sql_mode (bun's '...' escapes backslashes, which NO_BACKSLASH_ESCAPES
//     stores doubled) and any connection character set.
//   - SQLite: bun's own '...', with quotes doubled; SQLite has no escapes.
//
// A '?' or '$1' in a key is inside a literal, so neither bun nor the server
// reads it as a parameter; the statements' own placeholders are plain '?',
// never '?name' or '?0', which bun would read as its named or positional
// arguments. A string bun's formatting would change, one that is not valid
// UTF-8 (bun writes U+FFFD) or holds a NUL byte (bun drops it), is refused
// with an error matching [core.ErrInvalidArgument] and never sent, rather
// than locking another key; leasehold's core refuses such keys anyway. The
// cost of formatting on the client is that the server sees every statement
// as new text, so no plan is reused, and that keys and owners appear in the
// query text that hooks log.
//
// A key therefore compares byte for byte, as the contract requires, and a
// Store of this package and a sqlstore.Store over database/sql (the
// leasehold command, another service) can share one table and exclude each
// other.
package bunstore
