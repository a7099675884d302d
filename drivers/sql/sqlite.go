package sqlstore

// SQLite: one statement per operation; SQLite runs each under its database
// write lock, so reading the counter and writing the row cannot interleave
// with another writer. Time is SQLite's clock in integer milliseconds
// (julianday('now') is fixed for the statement, and exact to the
// millisecond; unixepoch('subsec') would need 3.42). TEXT compares with the
// BINARY collation: memcmp, no folding, no padding.
func sqliteTemplates(table string) templates {
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
	return templates{
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
		// Names compare as SQLite's identifiers do, without case. The
		// schema statements run in order, each once the one before has
		// succeeded, so with the triggers there the counter's row is too.
		migrated: `SELECT count(*) = 4 FROM sqlite_schema
WHERE type IN ('table', 'trigger') AND lower(name) IN (lower('` + table + `'), lower('` + table + `_counter'), lower('` + table + `_token_insert'), lower('` + table + `_token_update'))`,
		drop: []string{
			`DROP TABLE IF EXISTS ` + t, // drops its triggers too
			`DROP TABLE IF EXISTS ` + counter,
		},
		// As on PostgreSQL: the update path only when the lock is free or
		// expired; the token floored at the row's token + 1.
		acquire: `INSERT INTO ` + t + ` AS l (lock_key, owner, token, expires_at)
VALUES ({key}, {owner}, ` + next + `, ` + now + ` + {ttl})
ON CONFLICT (lock_key) DO UPDATE
SET owner = excluded.owner,
    token = max(` + next + `, l.token + 1),
    expires_at = excluded.expires_at
WHERE l.owner IS NULL OR l.expires_at <= ` + now + `
RETURNING token, 0`,
		renew: `UPDATE ` + t + ` SET expires_at = ` + now + ` + {ttl}
WHERE lock_key = {key} AND owner = {owner} AND expires_at > ` + now,
		// As on PostgreSQL, from a JSON array of [key, owner, ttl] (with
		// SQLite's JSON functions, built in since 3.38). RETURNING may not
		// name the FROM table, so the renewed rows give their key and owner.
		renewBatch: `UPDATE ` + t + ` AS l SET expires_at = ` + now + ` + v.ttl
FROM (SELECT json_extract(value, '$[0]') AS k, json_extract(value, '$[1]') AS o, json_extract(value, '$[2]') AS ttl FROM json_each({batch})) AS v
WHERE l.lock_key = v.k AND l.owner = v.o AND l.expires_at > ` + now + `
RETURNING lock_key, owner`,
		// left reads, after a refused acquire, the milliseconds the holder
		// has left: a hint for waiters (see TryAcquire), not a decision.
		left: `SELECT max(expires_at - ` + now + `, 0) FROM ` + t + `
WHERE lock_key = {key} AND owner IS NOT NULL`,
		release: `UPDATE ` + t + ` SET owner = NULL
WHERE lock_key = {key} AND owner = {owner} AND expires_at > ` + now,
		list: `SELECT lock_key, owner, token, (expires_at - ` + now + `) * 1000 FROM ` + t + `
WHERE owner IS NOT NULL AND expires_at > ` + now + ` AND lock_key >= {prefix} AND substr(lock_key, 1, length({prefix})) = {prefix}
ORDER BY lock_key`,
		resetTokens: `UPDATE ` + counter + ` SET n = 0 WHERE id = 1`,
	}
}
