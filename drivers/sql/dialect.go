package sqlstore

import (
	"errors"
	"fmt"
	"reflect"
)

// Dialect is the SQL of one database: its schema and the statements of each
// operation. [Store] holds the logic they share. Use [Postgres], [MySQL] or
// [SQLite]; the zero Dialect is invalid.
type Dialect struct {
	name  string
	build func(table string) statements
	// txAcquire: acquire is the transaction ensure, lock, draw, take
	// (MySQL), not the one statement acquire.
	txAcquire bool
	// retryable reports an error after which the acquire transaction is
	// safely retried (a deadlock: the server rolled it back).
	retryable func(error) bool
}

// String returns the dialect's name.
func (d Dialect) String() string { return d.name }

// param names a value bound to a placeholder. Each statement lists its
// params in placeholder order, so one set of values serves every dialect.
type param uint8

const (
	pKey    param = iota
	pOwner        // the caller's owner
	pTTL          // ttl in whole milliseconds, int64
	pToken        // MySQL: the token to write, or the floor to draw from
	pPrefix       // List's key prefix
)

type stmt struct {
	sql    string
	params []param
}

type statements struct {
	schema []string
	// migrateLock, if set, runs first in Migrate's transaction so that
	// concurrent migrations wait for each other.
	migrateLock string

	// acquire, one statement: returns one row (the token) when it acquired,
	// none when the key is held. PostgreSQL and SQLite.
	acquire stmt

	// MySQL's acquire transaction, see mysqlStatements.
	ensure, lock, draw, take stmt

	// renew and release affect one row when they succeed, none otherwise.
	renew, release stmt
	// list returns key, owner, token and microseconds left of live locks.
	list stmt
	// resetTokens sends the token source back to zero.
	resetTokens stmt
}

// Postgres is the dialect of PostgreSQL 11 and later (clock_timestamp, ON
// CONFLICT, starts_with). Every operation is one statement.
var Postgres = Dialect{name: "PostgreSQL", build: postgresStatements}

// MySQL is the dialect of MySQL 8 and MariaDB 10.6 and later. Renew and
// Release are one statement; Acquire is a short transaction (see the
// package documentation) and needs a [Beginner].
var MySQL = Dialect{name: "MySQL", build: mysqlStatements, txAcquire: true, retryable: mysqlDeadlock}

// SQLite is the dialect of SQLite 3.35 and later (UPSERT with RETURNING).
// Every operation is one statement.
var SQLite = Dialect{name: "SQLite", build: sqliteStatements}

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
		return fmt.Errorf("sqlstore: table name %q: want 1 to %d characters", name, maxTableName)
	}
	for i, c := range name {
		if c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || i > 0 && '0' <= c && c <= '9' {
			continue
		}
		return fmt.Errorf("sqlstore: table name %q: want a plain identifier (letters, digits, underscores; not starting with a digit)", name)
	}
	return nil
}

// SchemaSQL returns the statements that create the schema of dialect d with
// locks table table (or [DefaultTable] if empty), for users who run their
// own migrations. They are the statements [Store.Migrate] runs, in order,
// and each is idempotent (IF NOT EXISTS).
func SchemaSQL(d Dialect, table string) ([]string, error) {
	if d.build == nil {
		return nil, errZeroDialect
	}
	if table == "" {
		table = DefaultTable
	}
	if err := checkTable(table); err != nil {
		return nil, err
	}
	return d.build(table).schema, nil
}

var errZeroDialect = errors.New("sqlstore: zero Dialect; use sqlstore.Postgres, sqlstore.MySQL or sqlstore.SQLite")

// PostgreSQL: clock_timestamp() is the server's clock when it is read (now()
// would be frozen at the start of the caller's transaction). ttl arrives as
// bigint milliseconds, so weeks fit.
func postgresStatements(table string) statements {
	t := `"` + table + `"`
	seq := `"` + table + `_token_seq"`
	const expiry = `clock_timestamp() + $3::bigint * interval '1 millisecond'`
	return statements{
		schema: []string{
			`CREATE SEQUENCE IF NOT EXISTS ` + seq + ` AS bigint`,
			// COLLATE "C": keys compare byte for byte. The row outlives its
			// lock: with owner NULL it is the key's token floor.
			`CREATE TABLE IF NOT EXISTS ` + t + ` (
	lock_key   text COLLATE "C" NOT NULL PRIMARY KEY,
	owner      text,
	token      bigint NOT NULL,
	expires_at timestamptz NOT NULL
)`,
		},
		migrateLock: `SELECT pg_advisory_xact_lock(7358294415607213)`,
		// One statement. A new key takes the insert path. A known key takes
		// the update path only if its lock is free or expired, checked
		// under the row lock ON CONFLICT takes; the token is drawn in the
		// SET, after that lock, and floored at the row's own token + 1, so
		// it grows even if the sequence went back (a restore, a failover).
		acquire: stmt{`INSERT INTO ` + t + ` AS l (lock_key, owner, token, expires_at)
VALUES ($1, $2, nextval('` + seq + `'), ` + expiry + `)
ON CONFLICT (lock_key) DO UPDATE
SET owner = EXCLUDED.owner,
    token = GREATEST(nextval('` + seq + `'), l.token + 1),
    expires_at = ` + expiry + `
WHERE l.owner IS NULL OR l.expires_at <= clock_timestamp()
RETURNING token`, []param{pKey, pOwner, pTTL}},
		renew: stmt{`UPDATE ` + t + ` SET expires_at = ` + expiry + `
WHERE lock_key = $1 AND owner = $2 AND expires_at > clock_timestamp()`, []param{pKey, pOwner, pTTL}},
		// Release keeps the row, and with it the token floor.
		release: stmt{`UPDATE ` + t + ` SET owner = NULL
WHERE lock_key = $1 AND owner = $2 AND expires_at > clock_timestamp()`, []param{pKey, pOwner}},
		list: stmt{`SELECT lock_key, owner, token, (extract(epoch FROM expires_at - c.now) * 1000000)::bigint
FROM ` + t + `, (SELECT clock_timestamp() AS now) c
WHERE owner IS NOT NULL AND expires_at > c.now AND lock_key >= $1 AND starts_with(lock_key, $1)
ORDER BY lock_key`, []param{pPrefix}},
		resetTokens: stmt{`ALTER SEQUENCE ` + seq + ` RESTART`, nil},
	}
}

// MySQL and MariaDB. UTC_TIMESTAMP(6) is the server's clock, independent of
// the session time zone and of daylight saving; it is fixed for the
// duration of a statement. Keys (and owners) are VARBINARY: the default
// collations fold case and ignore trailing spaces, and MySQL 8's
// utf8mb4_bin still pads, so only a binary column compares bytes on both
// servers. 2000 bytes hold 500 characters of 4 bytes.
func mysqlStatements(table string) statements {
	t := "`" + table + "`"
	counter := "`" + table + "_counter`"
	const expiry = `UTC_TIMESTAMP(6) + INTERVAL ? * 1000 MICROSECOND`
	return statements{
		schema: []string{
			// version is bumped by every write, so that a renewal that
			// sets the same expiry (twice in one microsecond) still
			// changes the row: without CLIENT_FOUND_ROWS MySQL reports an
			// unchanged row as 0 rows affected, which would read as "not
			// renewed". This works whatever DSN the *sql.DB was opened with.
			`CREATE TABLE IF NOT EXISTS ` + t + ` (
	lock_key   VARBINARY(2000) NOT NULL,
	owner      VARBINARY(2000) NULL,
	token      BIGINT NOT NULL,
	expires_at DATETIME(6) NOT NULL,
	version    BIGINT NOT NULL DEFAULT 0,
	PRIMARY KEY (lock_key)
) ENGINE=InnoDB`,
			`CREATE TABLE IF NOT EXISTS ` + counter + ` (
	id TINYINT NOT NULL PRIMARY KEY,
	n  BIGINT NOT NULL
) ENGINE=InnoDB`,
			`INSERT INTO ` + counter + ` (id, n) VALUES (1, 0) ON DUPLICATE KEY UPDATE id = id`,
		},
		// MySQL has no RETURNING and no WHERE on ON DUPLICATE KEY UPDATE,
		// and the token comes from another table, so acquire is a
		// transaction of 4 statements plus BEGIN and COMMIT (a held key
		// exits after 2, with ROLLBACK):
		//  ensure: create the key's row if missing, else take its row lock
		//          (an upsert never needs a gap lock on a missing row, so
		//          concurrent acquirers of a new key queue, not deadlock);
		//  lock:   read the token and whether a live lock holds the key,
		//          under that row lock;
		//  draw:   the counter's next value, floored at the row's token + 1;
		//          LAST_INSERT_ID(expr) hands it back in the OK packet;
		//  take:   write owner, token and expiry.
		// Locks are always taken row first, counter last, and the counter
		// is only locked by acquirers that will win.
		ensure: stmt{`INSERT INTO ` + t + ` (lock_key, token, expires_at) VALUES (?, 0, UTC_TIMESTAMP(6))
ON DUPLICATE KEY UPDATE token = token`, []param{pKey}},
		lock: stmt{`SELECT token, owner IS NOT NULL AND expires_at > UTC_TIMESTAMP(6) FROM ` + t + `
WHERE lock_key = ? FOR UPDATE`, []param{pKey}},
		draw: stmt{`UPDATE ` + counter + ` SET n = LAST_INSERT_ID(GREATEST(n + 1, ?)) WHERE id = 1`, []param{pToken}},
		take: stmt{`UPDATE ` + t + ` SET owner = ?, token = ?, expires_at = ` + expiry + `, version = version + 1
WHERE lock_key = ?`, []param{pOwner, pToken, pTTL, pKey}},
		renew: stmt{`UPDATE ` + t + ` SET expires_at = ` + expiry + `, version = version + 1
WHERE lock_key = ? AND owner = ? AND expires_at > UTC_TIMESTAMP(6)`, []param{pTTL, pKey, pOwner}},
		release: stmt{`UPDATE ` + t + ` SET owner = NULL, version = version + 1
WHERE lock_key = ? AND owner = ? AND expires_at > UTC_TIMESTAMP(6)`, []param{pKey, pOwner}},
		list: stmt{`SELECT lock_key, owner, token, TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), expires_at) FROM ` + t + `
WHERE owner IS NOT NULL AND expires_at > UTC_TIMESTAMP(6) AND lock_key >= ? AND LEFT(lock_key, LENGTH(?)) = ?
ORDER BY lock_key`, []param{pPrefix, pPrefix, pPrefix}},
		resetTokens: stmt{`UPDATE ` + counter + ` SET n = 0 WHERE id = 1`, nil},
	}
}

// mysqlDeadlock reports MySQL error 1213 (ER_LOCK_DEADLOCK): InnoDB rolled
// the whole transaction back, so it is safe to run again. It looks for the
// Number field of go-sql-driver's *MySQLError by reflection, so that this
// package does not import (and register) a MySQL driver for every user.
func mysqlDeadlock(err error) bool {
	const erLockDeadlock = 1213
	for _, e := range errorTree(err) {
		v := reflect.ValueOf(e)
		if v.Kind() == reflect.Pointer && !v.IsNil() {
			v = v.Elem()
		}
		if v.Kind() != reflect.Struct {
			continue
		}
		if f := v.FieldByName("Number"); f.IsValid() && f.Kind() == reflect.Uint16 {
			return f.Uint() == erLockDeadlock
		}
	}
	return false
}

// errorTree lists err and every error it wraps.
func errorTree(err error) []error {
	var out []error
	var walk func(error)
	walk = func(e error) {
		if e == nil || len(out) > 64 {
			return
		}
		out = append(out, e)
		switch u := e.(type) {
		case interface{ Unwrap() error }:
			walk(u.Unwrap())
		case interface{ Unwrap() []error }:
			for _, x := range u.Unwrap() {
				walk(x)
			}
		}
	}
	walk(err)
	return out
}

// SQLite: one statement per operation; SQLite runs each under its database
// write lock, so reading the counter and writing the row cannot interleave
// with another writer. Time is SQLite's clock in integer milliseconds
// (julianday('now') is fixed for the statement, and exact to the
// millisecond; unixepoch('subsec') would need 3.42). TEXT compares with the
// BINARY collation: memcmp, no folding, no padding.
func sqliteStatements(table string) statements {
	t := `"` + table + `"`
	counter := `"` + table + `_counter"`
	const now = `CAST(round((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER)`
	next := `(SELECT n + 1 FROM ` + counter + ` WHERE id = 1)`
	// The triggers keep the counter at the highest token written, inside the
	// acquiring statement: the token source never falls behind a key.
	trigger := func(name, event string) string {
		return `CREATE TRIGGER IF NOT EXISTS "` + table + `_` + name + `" AFTER ` + event + ` ON ` + t + `
BEGIN
	UPDATE ` + counter + ` SET n = NEW.token WHERE id = 1 AND n < NEW.token;
END`
	}
	return statements{
		schema: []string{
			`CREATE TABLE IF NOT EXISTS ` + t + ` (
	lock_key   TEXT NOT NULL PRIMARY KEY,
	owner      TEXT,
	token      INTEGER NOT NULL,
	expires_at INTEGER NOT NULL
) WITHOUT ROWID`,
			`CREATE TABLE IF NOT EXISTS ` + counter + ` (
	id INTEGER NOT NULL PRIMARY KEY CHECK (id = 1),
	n  INTEGER NOT NULL
)`,
			`INSERT INTO ` + counter + ` (id, n) VALUES (1, 0) ON CONFLICT (id) DO NOTHING`,
			trigger("token_insert", "INSERT"),
			trigger("token_update", "UPDATE OF token"),
		},
		// As on PostgreSQL: the update path only when the lock is free or
		// expired; the token floored at the row's token + 1.
		acquire: stmt{`INSERT INTO ` + t + ` AS l (lock_key, owner, token, expires_at)
VALUES (?1, ?2, ` + next + `, ` + now + ` + ?3)
ON CONFLICT (lock_key) DO UPDATE
SET owner = excluded.owner,
    token = max(` + next + `, l.token + 1),
    expires_at = excluded.expires_at
WHERE l.owner IS NULL OR l.expires_at <= ` + now + `
RETURNING token`, []param{pKey, pOwner, pTTL}},
		renew: stmt{`UPDATE ` + t + ` SET expires_at = ` + now + ` + ?3
WHERE lock_key = ?1 AND owner = ?2 AND expires_at > ` + now, []param{pKey, pOwner, pTTL}},
		release: stmt{`UPDATE ` + t + ` SET owner = NULL
WHERE lock_key = ?1 AND owner = ?2 AND expires_at > ` + now, []param{pKey, pOwner}},
		list: stmt{`SELECT lock_key, owner, token, (expires_at - ` + now + `) * 1000 FROM ` + t + `
WHERE owner IS NOT NULL AND expires_at > ` + now + ` AND lock_key >= ?1 AND substr(lock_key, 1, length(?1)) = ?1
ORDER BY lock_key`, []param{pPrefix}},
		resetTokens: stmt{`UPDATE ` + counter + ` SET n = 0 WHERE id = 1`, nil},
	}
}

// bind returns the values of st's placeholders.
func (st stmt) bind(v values) []any {
	args := make([]any, len(st.params))
	for i, p := range st.params {
		switch p {
		case pKey:
			args[i] = v.key
		case pOwner:
			args[i] = v.owner
		case pTTL:
			args[i] = v.ttlMillis
		case pToken:
			args[i] = v.token
		case pPrefix:
			args[i] = v.prefix
		}
	}
	return args
}

// values are an operation's arguments.
type values struct {
	key, owner string
	ttlMillis  int64
	token      int64
	prefix     string
}
