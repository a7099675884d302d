package conformance

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"strings"
	"sync"
	"testing"
)

// nopDriver opens connections that do nothing, so that a test can drive a
// database/sql pool without a server.
type nopDriver struct{}
type nopConn struct{}

func (nopDriver) Open(string) (driver.Conn, error)  { return nopConn{}, nil }
func (nopConn) Prepare(string) (driver.Stmt, error) { return nil, driver.ErrSkip }
func (nopConn) Close() error                        { return nil }
func (nopConn) Begin() (driver.Tx, error)           { return nil, driver.ErrSkip }
func (nopConn) Ping(context.Context) error          { return nil }
func (nopConn) ExecContext(context.Context, string, []driver.NamedValue) (driver.Result, error) {
	return driver.RowsAffected(0), nil
}

var registerNop sync.Once

func TestWatchPoolAdvisesIdleConns(t *testing.T) {
	registerNop.Do(func() { sql.Register("conformance-nop", nopDriver{}) })
	for _, idle := range []int{2, 32} {
		db, err := sql.Open("conformance-nop", "")
		if err != nil {
			t.Fatal(err)
		}
		db.SetMaxOpenConns(32)
		db.SetMaxIdleConns(idle)
		r := &recorder{TB: t}
		done := watchPool(r, db, 16)
		for range 3 { // three race rounds of 32 calls at once
			var ready, wg sync.WaitGroup
			conns := make([]*sql.Conn, 32)
			ready.Add(32)
			for i := range conns {
				wg.Go(func() {
					c, err := db.Conn(context.Background())
					if err != nil {
						t.Error(err)
					}
					conns[i] = c
					ready.Done()
				})
			}
			ready.Wait()
			wg.Wait()
			for _, c := range conns {
				_ = c.Close()
			}
		}
		done()
		_ = db.Close()
		advised := strings.Contains(strings.Join(r.logs, "\n"), "SetMaxIdleConns(32)")
		if advised != (idle == 2) {
			t.Errorf("SetMaxIdleConns(%d): advised = %v, logs %q", idle, advised, r.logs)
		}
	}
}
