package testserver

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
)

// PrivatePostgres starts a PostgreSQL server of the test's own, from the
// binaries of /usr/lib/postgresql/<version>/bin (or PATH), as user postgres
// when the test runs as root, on a free loopback port with a fresh data
// directory; fsync is off, since the data is thrown away. Its DSN names the
// database "postgres", for database/sql driver "pgx". Without the binaries
// the test is skipped (failed under CI=true).
func PrivatePostgres(t testing.TB) *Server {
	t.Helper()
	initdb, err := findBinary("initdb", "/usr/lib/postgresql/*/bin/initdb")
	if err != nil {
		unavailable(t, "no PostgreSQL server binaries (initdb) for a private server: %v", err)
	}
	postgres := filepath.Join(filepath.Dir(initdb), "postgres")
	u, err := lookupServerUser("postgres")
	if err != nil {
		unavailable(t, "private PostgreSQL: %v", err)
	}
	dir := u.mkdir(t, "postgres")
	data := filepath.Join(dir, "data")
	u.run(t, "PostgreSQL", initdb, "-D", data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-sync")
	port := freePort(t)
	dsn := fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port)
	return startPrivate(t, &Server{
		Kind: "PostgreSQL", DSN: dsn, Port: port, t: t, dir: dir, dsnAt: urlAt(t, dsn),
		command: func() *exec.Cmd {
			return u.command(postgres, "-D", data, "-p", strconv.Itoa(port), "-k", dir,
				"-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "max_connections=200")
		},
		ready: sqlReady("pgx", dsn),
		stop:  syscall.SIGINT, // fast shutdown
	})
}

// PrivateMariaDB starts a MariaDB (or MySQL) server of the test's own, with
// mariadb-install-db and mariadbd, as user mysql when the test runs as
// root, on a free loopback port with its own data directory and socket.
// Its DSN (go-sql-driver/mysql) names an empty database "lh" and user root
// without a password. Without the binaries the test is skipped (failed under
// CI=true).
func PrivateMariaDB(t testing.TB) *Server {
	t.Helper()
	install, err := findBinary("mariadb-install-db")
	if err != nil {
		unavailable(t, "no mariadb-install-db for a private MariaDB server: %v", err)
	}
	mariadbd, err := findBinary("mariadbd", "/usr/sbin/mariadbd")
	if err != nil {
		unavailable(t, "no mariadbd for a private MariaDB server: %v", err)
	}
	u, err := lookupServerUser("mysql")
	if err != nil {
		unavailable(t, "private MariaDB: %v", err)
	}
	dir := u.mkdir(t, "mariadb")
	data := filepath.Join(dir, "data")
	// Its own temporary directory: a starting MariaDB removes every "#sql"
	// file it finds there as a leftover of its own, and in the shared /tmp
	// those are a running server's.
	tmp := "--tmpdir=" + dir
	u.run(t, "MariaDB", install, "--no-defaults", "--datadir="+data, tmp,
		"--auth-root-authentication-method=normal", "--skip-test-db")
	port := freePort(t)
	cfg := mysql.NewConfig()
	cfg.User, cfg.Net, cfg.Addr = "root", "tcp", fmt.Sprintf("127.0.0.1:%d", port)
	admin := cfg.FormatDSN()
	cfg.DBName = "lh"
	s := &Server{
		Kind: "MariaDB", DSN: cfg.FormatDSN(), Port: port, t: t, dir: dir,
		dsnAt: func(addr string) string {
			at := *cfg
			at.Addr = addr
			return at.FormatDSN()
		},
		command: func() *exec.Cmd {
			return u.command(mariadbd, "--no-defaults", "--datadir="+data, tmp,
				"--port="+strconv.Itoa(port), "--bind-address=127.0.0.1",
				"--socket="+filepath.Join(dir, "mysqld.sock"), "--pid-file="+filepath.Join(dir, "mysqld.pid"),
				"--skip-name-resolve", "--skip-log-bin", "--innodb-buffer-pool-size=32M",
				"--innodb-flush-log-at-trx-commit=2", "--max-connections=200")
		},
		ready: func(ctx context.Context) error {
			if err := sqlReady("mysql", admin)(ctx); err != nil {
				return err
			}
			db, err := sql.Open("mysql", admin)
			if err != nil {
				return err
			}
			defer db.Close()
			_, err = db.ExecContext(ctx, "CREATE DATABASE IF NOT EXISTS lh")
			return err
		},
		stop: syscall.SIGTERM,
	}
	return startPrivate(t, s)
}

// PrivateRedis starts a Redis server of the test's own, on a free loopback
// port, without persistence (a restart loses every key) unless args, more
// redis-server options that override the defaults, ask for it (such as
// "--appendonly", "yes"). Its DSN is a redis:// URL. Without redis-server
// the test is skipped (failed under CI=true).
func PrivateRedis(t testing.TB, args ...string) *Server {
	t.Helper()
	return privateRedis(t, args...)
}

// PrivateRedisReplica starts a private Redis server that replicates
// primary, and returns once the replica has its first copy of the data.
func PrivateRedisReplica(t testing.TB, primary *Server) *Server {
	t.Helper()
	r := privateRedis(t, "--replicaof", "127.0.0.1", strconv.Itoa(primary.Port))
	deadline := time.Now().Add(privateStartTimeout)
	for {
		info, err := redisDoAt(r.Addr(), redisAuth{}, "INFO", "replication")
		if err == nil && strings.Contains(info, "master_link_status:up") {
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("testserver: private Redis replica of %s not in sync within %v: %q, %v", primary.Addr(), privateStartTimeout, info, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func privateRedis(t testing.TB, args ...string) *Server {
	t.Helper()
	bin, err := findBinary("redis-server")
	if err != nil {
		unavailable(t, "no redis-server for a private Redis server: %v", err)
	}
	u, err := lookupServerUser("redis")
	if err != nil {
		u = serverUser{} // Redis runs as root too
	}
	dir := u.mkdir(t, "redis")
	port := freePort(t)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	return startPrivate(t, &Server{
		Kind: "Redis", DSN: "redis://" + addr + "/0", Port: port, t: t, dir: dir, dsnAt: urlAt(t, "redis://"+addr+"/0"),
		command: func() *exec.Cmd {
			// A replica gets its first copy at once, not after 5 seconds.
			return u.command(bin, append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1",
				"--save", "", "--appendonly", "no", "--dir", dir, "--repl-diskless-sync-delay", "0"}, args...)...)
		},
		ready: dialReady(addr),
		stop:  syscall.SIGTERM,
	})
}

// urlAt returns a function that gives the URL dsn with another host:port.
func urlAt(t testing.TB, dsn string) func(addr string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatalf("testserver: %s: %v", dsn, err)
	}
	return func(addr string) string {
		at := *u
		at.Host = addr
		return at.String()
	}
}

// sqlReady is a ready check that pings the server through database/sql.
func sqlReady(driver, dsn string) func(context.Context) error {
	return func(ctx context.Context) error {
		db, err := sql.Open(driver, dsn)
		if err != nil {
			return err
		}
		defer db.Close()
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		return db.PingContext(pctx)
	}
}
