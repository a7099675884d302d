package testserver

import (
	"database/sql"
	"os"
	"testing"

	"github.com/go-sql-driver/mysql" // also registers "mysql" with database/sql
)

// MySQL returns the go-sql-driver DSN of a new, empty MySQL or MariaDB
// database, dropped when t ends. The DSN keeps the parameters of
// LEASEHOLD_TEST_MYSQL and adds none: code under test must work with a DSN
// it does not control.
func MySQL(t testing.TB) string {
	t.Helper()
	base := os.Getenv(EnvMySQL)
	if base == "" {
		base = fromContainer(t, &mysqlContainer, "MySQL", EnvMySQL, startMySQL)
	}
	cfg, err := mysql.ParseDSN(base)
	if err != nil {
		t.Fatalf("testserver: %s: %v", EnvMySQL, err)
	}
	name := randomName("lh_")
	exec := func(q string) error {
		admin, err := sql.Open("mysql", cfg.FormatDSN())
		if err != nil {
			return err
		}
		defer admin.Close()
		ctx, cancel := setupContext()
		defer cancel()
		_, err = admin.ExecContext(ctx, q)
		return err
	}
	if err := exec("CREATE DATABASE " + name); err != nil {
		t.Fatalf("testserver: MySQL at %s: create database: %v", cfg.Addr, err)
	}
	t.Cleanup(func() {
		if err := exec("DROP DATABASE IF EXISTS " + name); err != nil {
			t.Errorf("testserver: drop database %s: %v", name, err)
		}
	})
	cfg.DBName = name
	return cfg.FormatDSN()
}
