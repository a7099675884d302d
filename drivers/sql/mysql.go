package sqlstore

// MySQL and MariaDB. UTC_TIMESTAMP(6) is the server's clock, independent of
// the session time zone and of daylight saving; it is fixed for the
// duration of a statement. Keys (and owners) are VARBINARY: the default
// collations fold case and ignore trailing spaces, and MySQL 8's
// utf8mb4_bin still pads, so only a binary column compares bytes on both
// servers. 2000 bytes hold 500 characters of 4 bytes.
func mysqlTemplates(table string) templates {
	t := "`" + table + "`"
	counter := "`" + table + "_counter`"
	const expiry = `UTC_TIMESTAMP(6) + INTERVAL {ttl} * 1000 MICROSECOND`
	return templates{
		schema: []string{
			// version changes with every write (bumped, or set to a
			// batch's mark), so that a renewal that sets the same expiry
			// (twice in one microsecond) still changes the row: without CLIENT_FOUND_ROWS MySQL reports an
			// unchanged row as 0 rows affected, which would read as "not
			// renewed". This works whatever DSN the handle was opened with.
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
		drop: []string{
			`DROP TABLE IF EXISTS ` + t,
			`DROP TABLE IF EXISTS ` + counter,
		},
		// MySQL has no RETURNING and no WHERE on ON DUPLICATE KEY UPDATE,
		// and the token comes from another table, so acquire is a
		// transaction of 4 statements plus BEGIN and COMMIT (a held key
		// exits after 2, with ROLLBACK):
		//  ensure: create the key's row if missing, else take its row lock
		//          (an upsert never needs a gap lock on a missing row, so
		//          concurrent acquirers of a new key queue, not deadlock);
		//  lock:   read the token, whether a live lock holds the key, and
		//          the milliseconds it has left, under that row lock;
		//  draw:   the counter's next value, floored at the row's token + 1;
		//          LAST_INSERT_ID(expr) hands it back in the OK packet;
		//  take:   write owner, token and expiry.
		// Locks are always taken row first, counter last, and the counter
		// is only locked by acquirers that will win.
		ensure: `INSERT INTO ` + t + ` (lock_key, token, expires_at) VALUES ({key}, 0, UTC_TIMESTAMP(6))
ON DUPLICATE KEY UPDATE token = token`,
		lock: `SELECT token, owner IS NOT NULL AND expires_at > UTC_TIMESTAMP(6),
  GREATEST(CEIL(TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), expires_at) / 1000), 0) FROM ` + t + `
WHERE lock_key = {key} FOR UPDATE`,
		draw: `UPDATE ` + counter + ` SET n = LAST_INSERT_ID(GREATEST(n + 1, {token})) WHERE id = 1`,
		take: `UPDATE ` + t + ` SET owner = {owner}, token = {token}, expires_at = ` + expiry + `, version = version + 1
WHERE lock_key = {key}`,
		renew: `UPDATE ` + t + ` SET expires_at = ` + expiry + `, version = version + 1
WHERE lock_key = {key} AND owner = {owner} AND expires_at > UTC_TIMESTAMP(6)`,
		// Without UPDATE ... RETURNING, a batch is two statements, no
		// transaction. renewMarked renews the live leases of the batch,
		// each row atomically, as renew would, and sets their version to
		// the call's mark, a random number in [1, 2^62) drawn per call:
		// that is the decision. readMarked then reads the answer: the
		// rows of the batch, still held by the lease's owner, that carry
		// the mark. A row renewed by the call carries it until its next
		// write (which bumps version), and only a renewal by the call
		// gives it: a row the call did not renew cannot have it (but for
		// a chance of one in 2^62 per row). A row written again between
		// the two statements (released, or expired and taken) reads as
		// not renewed, the answer that keeps nobody in for nothing. Keys
		// and owners arrive as hex, so the JSON is ASCII and UNHEX gives
		// their bytes whatever the connection's character set (a utf8mb3
		// connection cannot decode a 4-byte character from JSON).
		// JSON_TABLE drives the join, with one primary key lookup per
		// lease.
		renewMarked: `UPDATE ` + t + ` AS l
JOIN JSON_TABLE({batch}, '$[*]' COLUMNS (k VARCHAR(4000) PATH '$[0]', o VARCHAR(4000) PATH '$[1]', ttl BIGINT PATH '$[2]')) AS v
ON l.lock_key = UNHEX(v.k) AND l.owner = UNHEX(v.o)
SET l.expires_at = UTC_TIMESTAMP(6) + INTERVAL v.ttl * 1000 MICROSECOND, l.version = {mark}
WHERE l.expires_at > UTC_TIMESTAMP(6)`,
		readMarked: `SELECT l.lock_key, l.owner
FROM JSON_TABLE({batch}, '$[*]' COLUMNS (k VARCHAR(4000) PATH '$[0]', o VARCHAR(4000) PATH '$[1]')) AS v
JOIN ` + t + ` AS l ON l.lock_key = UNHEX(v.k) AND l.owner = UNHEX(v.o)
WHERE l.version = {mark}`,
		release: `UPDATE ` + t + ` SET owner = NULL, version = version + 1
WHERE lock_key = {key} AND owner = {owner} AND expires_at > UTC_TIMESTAMP(6)`,
		list: `SELECT lock_key, owner, token, TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), expires_at) FROM ` + t + `
WHERE owner IS NOT NULL AND expires_at > UTC_TIMESTAMP(6) AND lock_key >= {prefix} AND LEFT(lock_key, LENGTH({prefix})) = {prefix}
ORDER BY lock_key`,
		resetTokens: `UPDATE ` + counter + ` SET n = 0 WHERE id = 1`,
	}
}
