package testserver

import (
	"context"
	"database/sql"
	"net"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"
)

// TestPrivateServers starts each private server, and stops, kills and
// restarts it: a connection pool reconnects by itself each time.
func TestPrivateServers(t *testing.T) {
	for _, c := range []struct {
		start  func(testing.TB) *Server
		driver string // "" for a server the test only dials
	}{
		{PrivatePostgres, "pgx"},
		{PrivateMariaDB, "mysql"},
		{func(t testing.TB) *Server { return PrivateRedis(t) }, ""},
	} {
		s := c.start(t)
		t.Run(s.Kind, func(t *testing.T) {
			pingAt := func(what, dsn string) {
				t.Helper()
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				if c.driver == "" {
					u, err := url.Parse(dsn)
					if err != nil {
						t.Fatal(err)
					}
					if err := dialReady(u.Host)(ctx); err != nil {
						t.Fatalf("%s: %v", what, err)
					}
					return
				}
				db, err := sql.Open(c.driver, dsn)
				if err != nil {
					t.Fatal(err)
				}
				defer db.Close()
				if err := db.PingContext(ctx); err != nil {
					t.Fatalf("%s: %v", what, err)
				}
			}
			ping := func(what string) { t.Helper(); pingAt(what, s.DSN) }
			ping("started")
			proxy := NewProxy(t, s.Addr())
			pingAt("through a proxy", s.DSNAt(proxy.Addr()))
			// (A Redis server is only dialled: no request goes through.)
			if at := s.DSNAt(proxy.Addr()); !strings.Contains(at, proxy.Addr()) || c.driver != "" && proxy.Requests() == 0 {
				t.Fatalf("DSNAt(%s) = %s, which does not reach the server through the proxy", proxy.Addr(), s.DSNAt(proxy.Addr()))
			}
			pid := s.PID()
			s.Restart()
			if s.PID() == pid || s.PID() == 0 {
				t.Fatalf("restart: pid %d, then %d", pid, s.PID())
			}
			ping("restarted")
			s.Kill()
			if s.PID() != 0 {
				t.Fatal("killed, and still has a pid")
			}
			if c, err := net.DialTimeout("tcp", s.Addr(), time.Second); err == nil {
				c.Close()
				t.Fatal("killed, and still accepts connections")
			}
			s.Start()
			ping("started after a kill")
		})
	}
}

// TestPrivateMariaDBKeepsOthersTempFiles: a private MariaDB removes, as it
// starts, the "#sql" files it finds in its temporary directory, which it
// takes for its own leftovers. In the shared /tmp they were the running
// shared server's: a private server started by a fault test beside the
// kit's MySQL runs made the shared server fail a statement with "Error on
// delete of '/tmp/#sql-update-….MAI'". Each private server has its own.
func TestPrivateMariaDBKeepsOthersTempFiles(t *testing.T) {
	f, err := os.CreateTemp("", "#sql-leasehold-test-*.MAI")
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	t.Cleanup(func() { os.Remove(f.Name()) })
	// The shared server's files are the server user's, as the private
	// server's process is.
	if u, err := lookupServerUser("mysql"); err == nil && u.cred != nil {
		if err := os.Chown(f.Name(), int(u.cred.Uid), int(u.cred.Gid)); err != nil {
			t.Fatal(err)
		}
	}
	PrivateMariaDB(t)
	if _, err := os.Stat(f.Name()); err != nil {
		t.Fatalf("%s, another server's temporary file, after a private MariaDB started: %v", f.Name(), err)
	}
}
