package integration_test

import (
	"database/sql"
	"strings"
	"testing"

	gomysql "github.com/go-sql-driver/mysql"
	"gorm.io/gorm"
	"gorm.io/plugin/dbresolver"

	gormstore "github.com/leasehold/leasehold/drivers/gorm"
)

// TestResolverSendsNothingToReplicas: under gorm.io/plugin/dbresolver,
// with a replica that refuses writes and holds the schema but no lock,
// every statement of the store goes to the primary: the writes, MySQL's
// acquire transaction, and List, which starts with SELECT (dbresolver's
// sign of a read) and on the replica would miss the lock just taken.
func TestResolverSendsNothingToReplicas(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		replica, replicaLog := readOnlyCopy(t, b)
		db := open(t, b, nil)
		if err := db.Use(dbresolver.Register(dbresolver.Config{Replicas: []gorm.Dialector{b.conn(replica)}})); err != nil {
			t.Fatal(err)
		}
		replicaLog.take() // the dialector's start-up queries
		// The resolver is at work: the application's reads go to the
		// replica (the primary has no table yet).
		var n int64
		if err := db.Raw("SELECT count(*) FROM leasehold_locks").Scan(&n).Error; err != nil {
			t.Fatalf("an application's SELECT, which dbresolver sends to the replica: %v", err)
		}
		if len(replicaLog.take()) != 1 {
			t.Fatal("dbresolver did not send the application's SELECT to the replica")
		}

		useEverything(t, migrated(t, db))
		if sent := replicaLog.take(); len(sent) > 0 {
			t.Fatalf("the store sent %d statements to the replica: %v", len(sent), sent)
		}
	})
}

// TestResolverWithSourcesOfItsOwn: when dbresolver's sources are not the
// database the *gorm.DB was opened on, a store over
// db.Clauses(dbresolver.Write) runs everything on the sources, its
// transactions included (GORM begins them on the statement's pool, which
// the Write clause picked): nothing reaches the opened database or the
// replica, both read-only here.
func TestResolverWithSourcesOfItsOwn(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		opened, openedLog := readOnlyCopy(t, b)
		replica, replicaLog := readOnlyCopy(t, b)
		sourceDSN := b.dsn(t)
		db := openConn(t, b, opened, nil)
		err := db.Use(dbresolver.Register(dbresolver.Config{
			Sources:  []gorm.Dialector{b.conn(openPool(t, b, sourceDSN))},
			Replicas: []gorm.Dialector{b.conn(replica)},
		}))
		if err != nil {
			t.Fatal(err)
		}
		openedLog.take() // the dialectors' start-up queries
		replicaLog.take()

		useEverything(t, migrated(t, db.Clauses(dbresolver.Write)))
		if sent := append(openedLog.take(), replicaLog.take()...); len(sent) > 0 {
			t.Fatalf("the store sent %d statements elsewhere than to the sources: %v", len(sent), sent)
		}
		// The lock is on the source.
		s := newStore(t, openDSN(t, b, sourceDSN, nil))
		if l, err := s.List(ctxT(t), "resolver:"); err != nil || len(l) != 1 {
			t.Fatalf("List on the source = %v, %v; want the one lock", l, err)
		}
	})
}

// useEverything runs every kind of statement of s, and leaves one lock,
// "resolver:held", held.
func useEverything(t *testing.T, s *gormstore.Store) {
	t.Helper()
	wantAcquire(t, s, "resolver:k", "a", true)
	wantAcquire(t, s, "resolver:k", "b", false)
	wantRenew(t, s, "resolver:k", "a", true)
	if l, err := s.List(ctxT(t), "resolver:"); err != nil || len(l) != 1 || l[0].Key != "resolver:k" {
		t.Fatalf("List = %v, %v; want the lock just taken (a replica has none)", l, err)
	}
	wantRelease(t, s, "resolver:k", "a", true)
	if err := s.ResetTokens(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	wantAcquire(t, s, "resolver:held", "a", true)
}

// readOnlyCopy returns a new database of b with the schema but no lock,
// opened read-only through a pool that records what reaches it.
func readOnlyCopy(t *testing.T, b backend) (recordingDB, *calls) {
	t.Helper()
	dsn := b.dsn(t)
	migrated(t, openDSN(t, b, dsn, nil))
	log := &calls{}
	pool := record(openPool(t, b, readOnly(t, b, dsn)), log)
	if err := newStore(t, openConn(t, b, pool, nil)).ResetTokens(ctxT(t)); err == nil {
		t.Fatal("the read-only database accepted a write")
	}
	log.take()
	return pool, log
}

// readOnly returns dsn with the setting that makes b's sessions read-only.
func readOnly(t *testing.T, b backend, dsn string) string {
	t.Helper()
	switch b.name {
	case "postgres":
		return pgParam(dsn, "default_transaction_read_only", "on")
	case "mysql":
		cfg, err := gomysql.ParseDSN(dsn)
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Params == nil {
			cfg.Params = map[string]string{}
		}
		cfg.Params[mysqlReadOnlyVariable(t, dsn)] = "1" // go-sql-driver SETs it on connect
		return cfg.FormatDSN()
	}
	return dsn + "&mode=ro" // SQLite's URI parameter
}

// mysqlReadOnlyVariable is MariaDB's tx_read_only, MySQL 8's
// transaction_read_only.
func mysqlReadOnlyVariable(t *testing.T, dsn string) string {
	t.Helper()
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var version string
	if err := db.QueryRowContext(ctxT(t), "SELECT VERSION()").Scan(&version); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(version, "MariaDB") {
		return "tx_read_only"
	}
	return "transaction_read_only"
}
