package sqlstore

import (
	"context"
	"database/sql"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/leasehold/leasehold/internal/testserver"
)

// A varchar key with the default collation folds keys together: "a" and
// "A" (case-insensitive) and "a" and "a " (PAD SPACE) are one row, so one
// lock is handed to two different keys. The binary key of our schema keeps
// them apart.
func TestMySQLDefaultCollationMergesKeys(t *testing.T) {
	db := openMySQL(t)
	ctx := ctxT(t)
	// The schema of our table, but with the key a utf8mb4 varchar of the
	// default collation (utf8mb4_general_ci on MariaDB, utf8mb4_0900_ai_ci
	// on MySQL 8).
	folded, err := New(db, MySQL, WithTable("folded"))
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range folded.Schema() {
		q = strings.Replace(q, "lock_key   VARBINARY(2000)", "lock_key   VARCHAR(500) CHARACTER SET utf8mb4", 1)
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	ours, _ := newStore(t, backend{dialect: MySQL, open: func(testing.TB) *sql.DB { return db }})

	var version string
	if err := db.QueryRowContext(ctx, "SELECT VERSION()").Scan(&version); err != nil {
		t.Fatal(err)
	}
	// MariaDB's default collation is PAD SPACE; MySQL 8's is NO PAD, so
	// there only case folds (its utf8mb4_bin would pad, though).
	pairs := [][2]string{{"a", "A"}, {"Job", "job"}}
	if strings.Contains(version, "MariaDB") {
		pairs = append(pairs, [2]string{"b", "b "})
	}
	for _, pair := range pairs {
		// The folded table: the second key is refused although nobody holds it...
		mustAcquire(t, folded, pair[0], "owner1", minute)
		wantAcquire(t, folded, pair[1], "owner2", minute, false)
		// ...and the holder of the first can release the second.
		wantRelease(t, folded, pair[1], "owner1", true)

		// Our binary key: two keys, two locks.
		mustAcquire(t, ours, pair[0], "owner1", minute)
		mustAcquire(t, ours, pair[1], "owner2", minute)
		wantRelease(t, ours, pair[1], "owner1", false)
		wantRenew(t, ours, pair[0], "owner1", minute, true)
	}
}

// MySQL reports a row that an UPDATE leaves unchanged as not affected,
// unless the DSN asks for CLIENT_FOUND_ROWS. Two renewals that compute the
// same expiry (here: the session clock frozen with SET timestamp) must both
// succeed, whatever the DSN.
func TestMySQLRenewSameExpiry(t *testing.T) {
	dsn := testserver.MySQL(t)
	for _, foundRows := range []bool{false, true} {
		cfg, err := mysql.ParseDSN(dsn)
		if err != nil {
			t.Fatal(err)
		}
		cfg.ClientFoundRows = foundRows
		db := openDB(t, "mysql", cfg.FormatDSN(), 2)
		ctx := ctxT(t)
		conn, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		s, err := NewFromQuerier(FromSQL(conn), MySQL) // a *sql.Conn works too
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Migrate(ctx); err != nil {
			t.Fatal(err)
		}
		key := "frozen"
		if foundRows {
			key = "frozen-found-rows"
		}
		if _, err := conn.ExecContext(ctx, "SET timestamp = UNIX_TIMESTAMP(NOW(6))"); err != nil {
			t.Fatal(err)
		}
		mustAcquire(t, s, key, "o", minute)
		for range 3 {
			wantRenew(t, s, key, "o", minute, true)
		}
		// The test is not vacuous: the same UPDATE without the version bump
		// reports 0 rows, unless CLIENT_FOUND_ROWS.
		noBump := strings.Replace(s.st.renew.sql, ", version = version + 1", "", 1)
		res, err := conn.ExecContext(ctx, noBump, s.st.renew.bind(values{key: key, owner: "o", ttlMillis: minute.Milliseconds()})...)
		if err != nil {
			t.Fatal(err)
		}
		if n, _ := res.RowsAffected(); (n == 1) != foundRows {
			t.Fatalf("clientFoundRows=%v: renewal without the version bump affected %d rows", foundRows, n)
		}
		wantRelease(t, s, key, "o", true)
		if _, err := conn.ExecContext(context.Background(), "SET timestamp = DEFAULT"); err != nil {
			t.Fatal(err)
		}
	}
}

// The DATETIME(6) expiry is UTC on the server, whatever the session's
// time zone: two sessions in different zones agree on expiry.
func TestMySQLSessionTimeZone(t *testing.T) {
	dsn := testserver.MySQL(t)
	cfg, _ := mysql.ParseDSN(dsn)
	cfg.Params = map[string]string{"time_zone": "'+11:00'"}
	far := openDB(t, "mysql", cfg.FormatDSN(), 2)
	near := openDB(t, "mysql", dsn, 2)
	a, _ := New(far, MySQL)
	if err := a.Migrate(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	b, _ := New(near, MySQL)
	mustAcquire(t, a, "tz", "a", 2*time.Second)
	wantAcquire(t, b, "tz", "b", minute, false)
	l, err := b.List(ctxT(t), "tz")
	if err != nil || len(l) != 1 || l[0].ExpiresIn > 2*time.Second {
		t.Fatalf("List from another zone = %v, %v", l, err)
	}
}
