package integration_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"
	"gorm.io/gorm"
)

// mysqlBackend returns the MySQL/MariaDB backend.
func mysqlBackend(t *testing.T) backend {
	t.Helper()
	for _, b := range backends {
		if b.name == "mysql" {
			return b
		}
	}
	t.Fatal("no mysql backend")
	return backend{}
}

// TestMySQLRetriesThroughGORM: a lock wait timeout (error 1205) reaches the
// engine through GORM as go-sql-driver's error, even with GORM's error
// translation on, so the acquire transaction runs again, a bounded number
// of times, and then fails with an error, never "not acquired". Once the
// row is free, the key is acquired.
func TestMySQLRetriesThroughGORM(t *testing.T) {
	t.Parallel()
	b := mysqlBackend(t)
	dsn := b.dsn(t)
	cfg, err := gomysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Params = map[string]string{"innodb_lock_wait_timeout": "1"}
	traces := &traceLogger{}
	s := migrated(t, openDSN(t, b, cfg.FormatDSN(), &gorm.Config{Logger: traces, TranslateError: true}))
	wantAcquire(t, s, "retry", "a", true)
	wantRelease(t, s, "retry", "a", true)

	// Another client holds the row lock of the key.
	ctx := ctxT(t)
	tx, err := openPool(t, b, dsn).BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	var key string
	if err := tx.QueryRowContext(ctx, "SELECT lock_key FROM leasehold_locks WHERE lock_key = ? FOR UPDATE", "retry").Scan(&key); err != nil {
		t.Fatal(err)
	}
	traces.take()

	_, ok, err := s.Acquire(ctx, "retry", "b", time.Minute)
	var me *gomysql.MySQLError
	if ok || !errors.As(err, &me) || me.Number != 1205 || !strings.Contains(err.Error(), "attempt ") {
		t.Fatalf("Acquire of a row locked by another transaction = %v, %v; want a retried lock wait timeout (1205)", ok, err)
	}
	waits := 0
	for _, tr := range traces.take() {
		if errors.As(tr.err, &me) && me.Number == 1205 {
			waits++
		}
	}
	if waits < 2 {
		t.Fatalf("GORM's logger saw %d lock wait timeouts; want one per attempt, several attempts", waits)
	}

	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	wantAcquire(t, s, "retry", "b", true)
}

// TestKeysAreExactUnderMySQLsDefaultCollation: the test database has the
// server's default collation, which folds case (and on MariaDB ignores
// trailing spaces); through GORM, keys that differ only in case, trailing
// space or Unicode normalisation are still different locks.
func TestKeysAreExactUnderMySQLsDefaultCollation(t *testing.T) {
	t.Parallel()
	db := open(t, mysqlBackend(t), nil)
	var (
		collation   string
		foldsCase   bool
		padsSpaces  bool
		keysToCheck = []string{"Export", "export", "EXPORT", "a", "a ", "a  ", "\u00e9", "e\u0301"}
	)
	row := db.Raw("SELECT @@collation_database, 'a' = 'A', 'a' = 'a '").Row()
	if err := row.Scan(&collation, &foldsCase, &padsSpaces); err != nil {
		t.Fatal(err)
	}
	if !foldsCase && !padsSpaces {
		t.Skipf("the database's default collation %s neither folds case nor pads: this test needs one that does", collation)
	}
	t.Logf("default collation %s: folds case %v, ignores trailing spaces %v", collation, foldsCase, padsSpaces)

	s := migrated(t, db)
	for i, k := range keysToCheck {
		wantAcquire(t, s, k, "owner-"+k, true)
		// No other key's owner reaches this lock.
		other := keysToCheck[(i+1)%len(keysToCheck)]
		wantRenew(t, s, k, "owner-"+other, false)
	}
	l, err := s.List(ctxT(t), "")
	if err != nil || len(l) != len(keysToCheck) {
		t.Fatalf("List = %v, %v; want %d locks", l, err, len(keysToCheck))
	}
	for _, k := range keysToCheck {
		wantRelease(t, s, k, "owner-"+k, true)
	}
}
