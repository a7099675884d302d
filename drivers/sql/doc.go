// Package sqlstore keeps leasehold's locks in a table of the application's
// own SQL database: PostgreSQL, MySQL 8 / MariaDB 10.6+, or SQLite 3.35+.
//
// Import it as
//
//	import sqlstore "github.com/leasehold/leasehold/drivers/sql"
//
// The package is named sqlstore, not sql, so that it never clashes with
// database/sql, which the same file usually imports.
//
// A [Store] is a [core.LockStore] (and a [core.Lister]) over a *sql.DB ([New])
// or over any handle that can run statements ([NewFromQuerier]), such as an
// ORM's connection pool. A [Dialect] holds each database's SQL; the Store
// holds the logic they share. Create the schema with [Store.Migrate], or run
// the statements [SchemaSQL] returns in your own migrations.
//
// Every operation checks and writes atomically, on the database's clock:
//
//   - PostgreSQL and SQLite: every operation is one statement. Acquire is an
//     upsert whose update path only fires if the key's lock is free or
//     expired, and draws the token after the row lock, floored at the row's
//     own token + 1.
//   - MySQL/MariaDB: Renew and Release are one UPDATE each. Acquire is a
//     short transaction of four statements (create or lock the key's row,
//     read it, draw the token, write), because MySQL has neither RETURNING
//     nor a conditional ON DUPLICATE KEY UPDATE. A deadlock is retried a
//     few times; any other failure is an error, never "not acquired".
//
// The Store is also a [core.BatchRenewer]: an instance holding many locks
// renews up to 1000 of them in one statement on PostgreSQL and SQLite, and
// in one short transaction (a locking read, then one UPDATE) on
// MySQL/MariaDB. See [Store.RenewBatch].
//
// A released or expired lock keeps its row (owner NULL), so the key's next
// token is always greater than its last one, even if the token source goes
// back. Keys compare byte for byte: COLLATE "C" on PostgreSQL, VARBINARY on
// MySQL, the BINARY collation on SQLite.
//
// The embedded default, SQLite in a file through a pure-Go driver, is
// github.com/leasehold/leasehold/drivers/sqlite (package sqlitestore).
package sqlstore
