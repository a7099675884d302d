package testserver

import (
	"database/sql"
	"net/url"
	"os"
	"strings"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib" // registers "pgx" with database/sql
)

// Postgres returns the DSN of a new, empty PostgreSQL database, dropped when
// t ends. Open it with database/sql's driver "pgx".
func Postgres(t testing.TB) string {
	t.Helper()
	base := os.Getenv(EnvPostgres)
	if base == "" {
		base = fromContainer(t, &pgContainer, "PostgreSQL", EnvPostgres, startPostgres)
	}
	name := randomName("lh_")
	admin, err := sql.Open("pgx", base)
	if err != nil {
		t.Fatalf("testserver: %s: %v", EnvPostgres, err)
	}
	defer admin.Close()
	ctx, cancel := setupContext()
	defer cancel()
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("testserver: PostgreSQL at %s: create database: %v", redactURL(base), err)
	}
	t.Cleanup(func() {
		admin, err := sql.Open("pgx", base)
		if err != nil {
			t.Errorf("testserver: drop database %s: %v", name, err)
			return
		}
		defer admin.Close()
		ctx, cancel := setupContext()
		defer cancel()
		// FORCE (PostgreSQL 13+) ends the connections a test left open.
		if _, err := admin.ExecContext(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("testserver: drop database %s: %v", name, err)
		}
	})
	return withPostgresDatabase(base, name)
}

// withPostgresDatabase points dsn, a URL or a key=value string, at database db.
func withPostgresDatabase(dsn, db string) string {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		if u, err := url.Parse(dsn); err == nil {
			u.Path = "/" + db
			u.RawPath = ""
			return u.String()
		}
	}
	return dsn + " dbname=" + db // a later key overrides an earlier one
}

// redactURL hides a password in a URL for messages.
func redactURL(s string) string {
	if u, err := url.Parse(s); err == nil && u.Scheme != "" {
		return u.Redacted()
	}
	return "(" + EnvPostgres + ")"
}
