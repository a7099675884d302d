package integration_test

import (
	"context"
	"database/sql"
	sqlstore "github.com/leasehold/leasehold/drivers/sql"
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
	folded, err := sqlstore.New(db, sqlstore.MySQL, sqlstore.WithTable("folded"))
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range folded.Schema() {
		q = strings.Replace(q, "lock_key   VARBINARY(2000)", "lock_key   VARCHAR(500) CHARACTER SET utf8mb4", 1)
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	ours, _ := newStore(t, backend{dialect: sqlstore.MySQL, open: func(testing.TB) *sql.DB { return db }})

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
		s, err := sqlstore.NewFromQuerier(conn, sqlstore.MySQL) // a *sql.Conn works too
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
		rec := &recorder{}
		recording, err := sqlstore.NewWithExecutor(dbExecutor{q: conn, db: db, recorder: rec}, sqlstore.MySQL)
		if err != nil {
			t.Fatal(err)
		}
		wantRenew(t, recording, key, "o", minute, true)
		renew := rec.last("version = version + 1")
		noBump := strings.Replace(renew, ", version = version + 1", "", 1)
		if noBump == renew {
			t.Fatalf("the renewal %q bumps no version", renew)
		}
		// Renew binds ttl, key, owner, in this order (see mysql.go).
		res, err := conn.ExecContext(ctx, noBump, minute.Milliseconds(), key, "o")
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
	a, _ := sqlstore.New(far, sqlstore.MySQL)
	if err := a.Migrate(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	b, _ := sqlstore.New(near, sqlstore.MySQL)
	mustAcquire(t, a, "tz", "a", 2*time.Second)
	wantAcquire(t, b, "tz", "b", minute, false)
	l, err := b.List(ctxT(t), "tz")
	if err != nil || len(l) != 1 || l[0].ExpiresIn > 2*time.Second {
		t.Fatalf("List from another zone = %v, %v", l, err)
	}
}

// faulty is an executor that fails the statements whose SQL contains
// match, while fail says so.
type faulty struct {
	dbExecutor
	match string
	fail  func() error
}

func (f faulty) Exec(ctx context.Context, q string, args []any) (sql.Result, error) {
	if strings.Contains(q, f.match) {
		if err := f.fail(); err != nil {
			return nil, err
		}
	}
	return f.dbExecutor.Exec(ctx, q, args)
}

func (f faulty) Query(ctx context.Context, q string, args []any, scan func(sqlstore.Row) error) error {
	if strings.Contains(q, f.match) {
		if err := f.fail(); err != nil {
			return err
		}
	}
	return f.dbExecutor.Query(ctx, q, args, scan)
}

func (f faulty) InTx(ctx context.Context, fn func(tx sqlstore.Executor) error) error {
	return f.dbExecutor.InTx(ctx, func(tx sqlstore.Executor) error {
		inner := f
		inner.dbExecutor = tx.(dbExecutor)
		return fn(inner)
	})
}

// A deadlock inside the acquire transaction is retried; any other failure
// is an error, never "not acquired", and leaves the key free.
func TestMySQLAcquireFailures(t *testing.T) {
	db := openMySQL(t)
	plain, _ := newStore(t, backend{dialect: sqlstore.MySQL, open: func(testing.TB) *sql.DB { return db }})
	deadlock := &mysql.MySQLError{Number: 1213, Message: "Deadlock found when trying to get lock; try restarting transaction"}
	for _, tc := range []struct {
		name, match string
		failures    int
		err         error
		wantErr     bool
	}{
		{"deadlock on draw, retried", "LAST_INSERT_ID", 2, deadlock, false},
		{"deadlock on lock, retried", "FOR UPDATE", 1, deadlock, false},
		{"deadlock every time", "LAST_INSERT_ID", 100, deadlock, true},
		{"lock wait timeout, retried", "FOR UPDATE", 1, &mysql.MySQLError{Number: 1205, Message: "Lock wait timeout exceeded"}, false},
		{"syntax error", "FOR UPDATE", 1, &mysql.MySQLError{Number: 1064, Message: "You have an error in your SQL syntax"}, true},
		{"connection lost on take", "SET owner", 1, mysql.ErrInvalidConn, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var n int
			f := faulty{dbExecutor{q: db, db: db}, tc.match, func() error {
				if n++; n <= tc.failures {
					return tc.err
				}
				return nil
			}}
			s, err := sqlstore.NewWithExecutor(f, sqlstore.MySQL)
			if err != nil {
				t.Fatal(err)
			}
			key := "fault " + tc.name
			tok, ok, err := s.Acquire(ctxT(t), key, "o", minute)
			if tc.wantErr {
				if err == nil || ok {
					t.Fatalf("Acquire = %d, %v, %v; want an error", tok, ok, err)
				}
				// Nothing was written: the key is free.
				mustAcquire(t, plain, key, "other", minute)
				return
			}
			if err != nil || !ok || tok <= 0 {
				t.Fatalf("Acquire = %d, %v, %v; want it acquired after the retry", tok, ok, err)
			}
			wantAcquire(t, plain, key, "other", minute, false)
		})
	}
}
