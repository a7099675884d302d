package integration_test

import (
	"context"
	"database/sql"
	"fmt"
	"log"
	"time"

	_ "github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite"

	sqlstore "github.com/leasehold/leasehold/drivers/sql"
)

// A store over SQLite (here in memory; see the sqlitestore package for the
// embedded default in a file).
func Example() {
	db, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1) // each connection to ":memory:" is a database of its own

	store, err := sqlstore.New(db, sqlstore.SQLite)
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	if err := store.Migrate(ctx); err != nil {
		log.Fatal(err)
	}

	token, ok, err := store.Acquire(ctx, "invoices", "worker-1", 30*time.Second)
	fmt.Println("worker-1 acquires:", token, ok, err)
	_, ok, err = store.Acquire(ctx, "invoices", "worker-2", 30*time.Second)
	fmt.Println("worker-2 acquires:", ok, err)
	ok, err = store.Renew(ctx, "invoices", "worker-1", 30*time.Second)
	fmt.Println("worker-1 renews:", ok, err)
	ok, err = store.Release(ctx, "invoices", "worker-1")
	fmt.Println("worker-1 releases:", ok, err)
	token, ok, err = store.Acquire(ctx, "invoices", "worker-2", 30*time.Second)
	fmt.Println("worker-2 acquires:", token, ok, err)
	// Output:
	// worker-1 acquires: 1 true <nil>
	// worker-2 acquires: false <nil>
	// worker-1 renews: true <nil>
	// worker-1 releases: true <nil>
	// worker-2 acquires: 2 true <nil>
}

// PostgreSQL through pgx's database/sql driver.
func ExampleNew_postgres() {
	db, err := sql.Open("pgx", "postgres://app@127.0.0.1:5432/app?sslmode=disable")
	if err != nil {
		log.Fatal(err)
	}
	// One short statement per renewal of each held lock: a few connections
	// serve many locks.
	db.SetMaxOpenConns(10)
	store, err := sqlstore.New(db, sqlstore.Postgres)
	if err != nil {
		log.Fatal(err)
	}
	if err := store.Migrate(context.Background()); err != nil {
		log.Fatal(err)
	}
	// Pass store to core.New.
}

// MySQL or MariaDB through go-sql-driver. interpolateParams=true saves a
// prepare round trip per statement; the store works without it too.
func ExampleNew_mysql() {
	db, err := sql.Open("mysql", "app:secret@tcp(127.0.0.1:3306)/app?interpolateParams=true")
	if err != nil {
		log.Fatal(err)
	}
	store, err := sqlstore.New(db, sqlstore.MySQL, sqlstore.WithTable("app_locks"))
	if err != nil {
		log.Fatal(err)
	}
	if err := store.Migrate(context.Background()); err != nil {
		log.Fatal(err)
	}
}

// The schema as plain SQL, for migrations you run yourself.
func ExampleSchemaSQL() {
	stmts, err := sqlstore.SchemaSQL(sqlstore.Postgres, "")
	if err != nil {
		log.Fatal(err)
	}
	for _, s := range stmts {
		fmt.Println(s + ";")
	}
	// Output:
	// CREATE SEQUENCE IF NOT EXISTS "leasehold_locks_token_seq" AS bigint;
	// CREATE TABLE IF NOT EXISTS "leasehold_locks" (
	// 	lock_key   text COLLATE "C" NOT NULL PRIMARY KEY,
	// 	owner      text,
	// 	token      bigint NOT NULL,
	// 	expires_at timestamptz NOT NULL
	// );
}
