package integration

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib" // registers "pgx" with database/sql
	"github.com/leasehold/leasehold/core"
	"github.com/leasehold/leasehold/internal/testserver"
)

// openPool opens a pool of conns connections, all kept idle between
// calls, closed when t ends.
func openPool(t testing.TB, driver, dsn string, conns int) *sql.DB {
	t.Helper()
	db, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(conns)
	db.SetMaxIdleConns(conns)
	t.Cleanup(func() { _ = db.Close() })
	return db
}

func exec(t testing.TB, db *sql.DB, stmts ...string) {
	t.Helper()
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// selectThenWrite is textbook stores 4 and 5: Acquire is atomic, but Renew
// and Release read the owner with a SELECT and then write by key only.
type selectThenWrite struct {
	db *sql.DB
	// acquire takes the lock atomically and returns its token, 0 if the
	// key is held.
	acquire func(ctx context.Context, db *sql.DB, key, owner string, ttl time.Duration) (int64, error)
	owner   string // SELECT owner of a live lock ($1 or ? the key)
	renew   string // UPDATE by key (the key, then the ttl in ms)
	release string // DELETE by key
}

func (s *selectThenWrite) Acquire(ctx context.Context, key, owner string, ttl time.Duration) (int64, bool, error) {
	token, err := s.acquire(ctx, s.db, key, owner, ttl)
	return token, err == nil && token > 0, err
}

func (s *selectThenWrite) holds(ctx context.Context, key, owner string) (bool, error) {
	var holder string
	err := s.db.QueryRowContext(ctx, s.owner, key).Scan(&holder)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return err == nil && holder == owner, err
}

func (s *selectThenWrite) Renew(ctx context.Context, key, owner string, ttl time.Duration) (bool, error) {
	if ok, err := s.holds(ctx, key, owner); !ok || err != nil {
		return false, err
	}
	res, err := s.db.ExecContext(ctx, s.renew, key, ttl.Milliseconds())
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

func (s *selectThenWrite) Release(ctx context.Context, key, owner string) (bool, error) {
	if ok, err := s.holds(ctx, key, owner); !ok || err != nil {
		return false, err
	}
	res, err := s.db.ExecContext(ctx, s.release, key)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// postgresSelectThenUpdate is textbook store 4, on a new database of the
// test's PostgreSQL server, through a pool of conns connections: one makes
// it a store whose calls serialise, as SQLite's in memory does.
func postgresSelectThenUpdate(t testing.TB, conns int) func(testing.TB) core.LockStore {
	db := openPool(t, "pgx", testserver.Postgres(t), conns)
	exec(t, db,
		`CREATE SEQUENCE tokens`,
		`CREATE TABLE locks (k text PRIMARY KEY, owner text NOT NULL, expires_at timestamptz NOT NULL, token bigint NOT NULL)`)
	s := &selectThenWrite{
		db: db,
		acquire: func(ctx context.Context, db *sql.DB, key, owner string, ttl time.Duration) (int64, error) {
			var token int64
			err := db.QueryRowContext(ctx, `INSERT INTO locks AS l (k, owner, expires_at, token)
VALUES ($1, $2, clock_timestamp() + $3 * interval '1 millisecond', nextval('tokens'))
ON CONFLICT (k) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at, token = excluded.token
WHERE l.expires_at <= clock_timestamp()
RETURNING token`, key, owner, ttl.Milliseconds()).Scan(&token)
			if errors.Is(err, sql.ErrNoRows) {
				return 0, nil
			}
			return token, err
		},
		owner:   `SELECT owner FROM locks WHERE k = $1 AND expires_at > clock_timestamp()`,
		renew:   `UPDATE locks SET expires_at = clock_timestamp() + $2 * interval '1 millisecond' WHERE k = $1`,
		release: `DELETE FROM locks WHERE k = $1`,
	}
	return func(testing.TB) core.LockStore { return s }
}

// mariadbSelectThenUpdate is textbook store 5, on a new database of the
// test's MySQL or MariaDB server. Its Acquire is a transaction that locks
// the row it reads (FOR UPDATE), and draws the token in it.
func mariadbSelectThenUpdate(t testing.TB, callers int) func(testing.TB) core.LockStore {
	db := openPool(t, "mysql", testserver.MySQL(t), 2*callers)
	exec(t, db,
		`CREATE TABLE tokens (n BIGINT NOT NULL)`,
		`INSERT INTO tokens VALUES (0)`,
		`CREATE TABLE locks (k VARBINARY(600) PRIMARY KEY, owner VARBINARY(600) NOT NULL, expires_at DATETIME(6) NOT NULL, token BIGINT NOT NULL)`)
	s := &selectThenWrite{
		db: db,
		acquire: func(ctx context.Context, db *sql.DB, key, owner string, ttl time.Duration) (int64, error) {
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				return 0, err
			}
			defer func() { _ = tx.Rollback() }()
			var live bool
			err = tx.QueryRowContext(ctx, `SELECT expires_at > NOW(6) FROM locks WHERE k = ? FOR UPDATE`, key).Scan(&live)
			switch {
			case errors.Is(err, sql.ErrNoRows):
			case err != nil:
				return 0, err
			case live:
				return 0, nil
			}
			res, err := tx.ExecContext(ctx, `UPDATE tokens SET n = LAST_INSERT_ID(n + 1)`)
			if err != nil {
				return 0, err
			}
			token, err := res.LastInsertId()
			if err != nil {
				return 0, err
			}
			_, err = tx.ExecContext(ctx, `INSERT INTO locks (k, owner, expires_at, token) VALUES (?, ?, NOW(6) + INTERVAL ? MICROSECOND, ?)
ON DUPLICATE KEY UPDATE owner = VALUES(owner), expires_at = VALUES(expires_at), token = VALUES(token)`, key, owner, ttl.Microseconds(), token)
			var dup *mysql.MySQLError
			if errors.As(err, &dup) && (dup.Number == 1213 || dup.Number == 1062) {
				return 0, nil // a concurrent Acquire of the free key won
			}
			if err != nil {
				return 0, err
			}
			return token, tx.Commit()
		},
		owner:   `SELECT owner FROM locks WHERE k = ? AND expires_at > NOW(6)`,
		renew:   `UPDATE locks SET expires_at = NOW(6) + INTERVAL ? * 1000 MICROSECOND WHERE k = ?`,
		release: `DELETE FROM locks WHERE k = ?`,
	}
	return func(testing.TB) core.LockStore { return mysqlArgs{s} }
}

// mysqlArgs puts the renewal's arguments in the order of the MySQL
// statement (ttl, then key).
type mysqlArgs struct{ *selectThenWrite }

func (m mysqlArgs) Renew(ctx context.Context, key, owner string, ttl time.Duration) (bool, error) {
	if ok, err := m.holds(ctx, key, owner); !ok || err != nil {
		return false, err
	}
	res, err := m.db.ExecContext(ctx, m.renew, ttl.Milliseconds(), key)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}
