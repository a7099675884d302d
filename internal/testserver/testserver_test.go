package testserver

import (
	"context"
	"database/sql"
	"testing"
)

func TestPostgres(t *testing.T) {
	dsn := Postgres(t)
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var name string
	if err := db.QueryRowContext(context.Background(), "SELECT current_database()").Scan(&name); err != nil {
		t.Fatal(err)
	}
	if len(name) != len("lh_")+12 || name[:3] != "lh_" {
		t.Fatalf("database %q, want lh_<random>", name)
	}
}

func TestMySQL(t *testing.T) {
	dsn := MySQL(t)
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var name string
	if err := db.QueryRowContext(context.Background(), "SELECT DATABASE()").Scan(&name); err != nil {
		t.Fatal(err)
	}
	if len(name) != len("lh_")+12 || name[:3] != "lh_" {
		t.Fatalf("database %q, want lh_<random>", name)
	}
}

func TestRedis(t *testing.T) {
	url, prefix := Redis(t)
	if _, err := redisDo(url, "SET", prefix+"k", "v", "PX", "60000"); err != nil {
		t.Fatal(err)
	}
	got, err := redisDo(url, "GET", prefix+"k")
	if err != nil || got != "v" {
		t.Fatalf("GET = %q, %v; want v", got, err)
	}
}

func TestPostgresKeywordDSN(t *testing.T) {
	got := withPostgresDatabase("host=127.0.0.1 user=postgres dbname=test", "lh_x")
	if got != "host=127.0.0.1 user=postgres dbname=test dbname=lh_x" {
		t.Fatal(got)
	}
	got = withPostgresDatabase("postgres://u:p@127.0.0.1:5432/test?sslmode=disable", "lh_x")
	if got != "postgres://u:p@127.0.0.1:5432/lh_x?sslmode=disable" {
		t.Fatal(got)
	}
}
