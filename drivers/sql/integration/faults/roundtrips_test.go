package faults_test

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	sqlstore "github.com/leasehold/leasehold/drivers/sql"
	"github.com/leasehold/leasehold/internal/testserver"
	"github.com/leasehold/leasehold/internal/testserver/faults"
)

// TestRenewalRoundTripsAfterIdle counts the round trips of a renewal sent
// on a connection idle for more than a second, as renewals every ttl/3
// are. pgx's database/sql adapter pings such a connection first (two round
// trips); with stdlib.OptionShouldPing deciding otherwise, it is one.
// go-sql-driver/mysql prepares every statement with arguments (two round
// trips, idle or not, and a close that waits for no reply) unless the DSN
// sets interpolateParams=true. docs/sql.md
// names the drivers and the fixes.
func TestRenewalRoundTripsAfterIdle(t *testing.T) {
	pgSrv := testserver.PrivatePostgres(t)
	noPing := func(dsn string) *sql.DB {
		cfg, err := pgx.ParseConfig(dsn)
		if err != nil {
			t.Fatal(err)
		}
		return stdlib.OpenDB(*cfg, stdlib.OptionShouldPing(func(_ context.Context, p stdlib.ShouldPingParams) bool {
			return p.IdleDuration > time.Minute
		}))
	}
	mariaSrv := backends[1].start(t)
	for i, c := range []struct {
		name string
		b    backend
		open func(dsn string) *sql.DB
		want int
	}{
		{"pgx stdlib, default", backends[0], func(dsn string) *sql.DB { db, _ := sql.Open("pgx", dsn); return db }, 2},
		{"pgx stdlib, OptionShouldPing", backends[0], noPing, 1},
		{"go-sql-driver/mysql, default", backends[1], func(dsn string) *sql.DB { db, _ := sql.Open("mysql", dsn); return db }, 2},
		{"go-sql-driver/mysql, interpolateParams", backends[1], func(dsn string) *sql.DB {
			cfg, err := mysql.ParseDSN(dsn)
			if err != nil {
				t.Fatal(err)
			}
			cfg.InterpolateParams = true
			db, _ := sql.Open("mysql", cfg.FormatDSN())
			return db
		}, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv, key := pgSrv, fmt.Sprintf("idle:%d", i)
			if c.b.name == "MariaDB" {
				srv = mariaSrv
			}
			proxy := testserver.NewProxy(t, srv.Addr())
			db := c.open(srv.DSNAt(proxy.Addr()))
			t.Cleanup(func() { db.Close() })
			db.SetMaxOpenConns(1)
			store, err := sqlstore.New(db, c.b.dialect)
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			if err := store.Migrate(ctx); err != nil {
				t.Fatal(err)
			}
			if _, ok, err := store.Acquire(ctx, key, "o", time.Minute); err != nil || !ok {
				t.Fatalf("Acquire: %v, %v", ok, err)
			}
			if _, err := store.Renew(ctx, key, "o", time.Minute); err != nil { // prepares the statement
				t.Fatal(err)
			}
			time.Sleep(1100 * time.Millisecond)
			before := proxy.RoundTrips()
			if ok, err := store.Renew(ctx, key, "o", time.Minute); err != nil || !ok {
				t.Fatalf("Renew: %v, %v", ok, err)
			}
			got := proxy.RoundTrips() - before
			faults.Figure(t, "renewal after 1.1s idle, %s: %d round trips", c.name, got)
			if got != c.want {
				t.Fatalf("a renewal after 1.1s idle took %d round trips, want %d", got, c.want)
			}
		})
	}
}
