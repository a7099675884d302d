package sqlstore

// PostgreSQL: clock_timestamp() is the server's clock when it is read (now()
// would be frozen at the start of the caller's transaction). ttl arrives as
// bigint milliseconds, so weeks fit.
func postgresTemplates(table string) templates {
	t := `"` + table + `"`
	seq := `"` + table + `_token_seq"`
	const expiry = `clock_timestamp() + CAST({ttl} AS bigint) * interval '1 millisecond'`
	return templates{
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
		drop: []string{
			`DROP TABLE IF EXISTS ` + t,
			`DROP SEQUENCE IF EXISTS ` + seq,
		},
		migrateLock: `SELECT pg_advisory_xact_lock(7358294415607213)`,
		// One statement. A new key takes the insert path. A known key takes
		// the update path only if its lock is free or expired, checked
		// under the row lock ON CONFLICT takes; the token is drawn in the
		// SET, after that lock, and floored at the row's own token + 1, so
		// it grows even if the sequence went back (a restore, a failover).
		//
		// The statement answers one row: the token when it took the key;
		// else 0 and the milliseconds the holder has left, read from the
		// statement's snapshot (a hint for waiters, see TryAcquire; 0 when
		// the snapshot does not show a live holder).
		acquire: `WITH a AS (
INSERT INTO ` + t + ` AS l (lock_key, owner, token, expires_at)
VALUES ({key}, {owner}, nextval('` + seq + `'), ` + expiry + `)
ON CONFLICT (lock_key) DO UPDATE
SET owner = EXCLUDED.owner,
    token = GREATEST(nextval('` + seq + `'), l.token + 1),
    expires_at = ` + expiry + `
WHERE l.owner IS NULL OR l.expires_at <= clock_timestamp()
RETURNING token)
SELECT token, 0 FROM a
UNION ALL
SELECT 0, GREATEST(CAST(ceil(extract(epoch FROM h.expires_at - clock_timestamp()) * 1000) AS bigint), 0)
FROM ` + t + ` AS h
WHERE h.lock_key = {key} AND h.owner IS NOT NULL AND NOT EXISTS (SELECT 1 FROM a)`,
		renew: `UPDATE ` + t + ` SET expires_at = ` + expiry + `
WHERE lock_key = {key} AND owner = {owner} AND expires_at > clock_timestamp()`,
		// A batch arrives as one JSON array of [key, owner, ttl], one
		// parameter whatever its size and placeholder style. Each lease is
		// checked and renewed under its row's lock, on the database's
		// clock, and the rows renewed come back.
		renewBatch: `UPDATE ` + t + ` AS l
SET expires_at = clock_timestamp() + CAST(v.e->>2 AS bigint) * interval '1 millisecond'
FROM json_array_elements(CAST(CAST({batch} AS text) AS json)) AS v(e)
WHERE l.lock_key = v.e->>0 AND l.owner = v.e->>1 AND l.expires_at > clock_timestamp()
RETURNING l.lock_key, l.owner`,
		// Release keeps the row, and with it the token floor. It is one
		// statement that also notifies the release on the table's channel
		// (see Store.Subscribe), delivered when it commits, and counts the
		// rows it released (0 or 1). Its commit does not wait for the
		// disk (synchronous_commit off for this transaction only): a
		// release lost in a crash leaves the key taken until its lease
		// ends, never taken twice, and the next acquire's commit, which
		// does wait, flushes it first. So the notification leaves, and
		// the notifying commits' cluster-wide lock is let go, a flush
		// sooner.
		releaseNotify: `WITH r AS (
UPDATE ` + t + ` SET owner = NULL
WHERE lock_key = {key} AND owner = {owner} AND expires_at > clock_timestamp()
RETURNING lock_key)
SELECT count(pg_notify('` + table + releasedSuffix + `', r.lock_key))
FROM r, (SELECT set_config('synchronous_commit', 'off', true)) AS async`,
		list: `SELECT lock_key, owner, token, CAST(extract(epoch FROM expires_at - c.now) * 1000000 AS bigint)
FROM ` + t + `, (SELECT clock_timestamp() AS now) c
WHERE owner IS NOT NULL AND expires_at > c.now AND lock_key >= {prefix} AND starts_with(lock_key, {prefix})
ORDER BY lock_key`,
		resetTokens: `ALTER SEQUENCE ` + seq + ` RESTART`,
	}
}
