package pgxstore_test

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/leasehold/leasehold/core"
	"github.com/leasehold/leasehold/core/connhint"
	pgxstore "github.com/leasehold/leasehold/drivers/pgx"
)

// TestConnectionFailuresNameTheirCause points a pool at a listener that
// accepts and never answers, and at a port nothing listens on: Migrate and
// an Acquire through core.Locks each return the driver's error with the
// likely cause.
func TestConnectionFailuresNameTheirCause(t *testing.T) {
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { silent.Close() })
	go func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
			go io.Copy(io.Discard, c)
		}
	}()
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed.Close()

	for _, tc := range []struct{ name, addr, hint string }{
		{"a server that never answers", silent.Addr().String(), "no answer within the dial timeout"},
		{"nothing listens", closed.Addr().String(), "nothing listens at that address"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := pgxpool.ParseConfig("postgres://app@" + tc.addr + "/app?sslmode=disable")
			if err != nil {
				t.Fatal(err)
			}
			cfg.ConnConfig.ConnectTimeout = 300 * time.Millisecond
			pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(pool.Close)
			s, err := pgxstore.New(pool)
			if err != nil {
				t.Fatal(err)
			}
			check := func(what string, err error) {
				t.Helper()
				var hinted *connhint.Error
				if !errors.As(err, &hinted) || !strings.Contains(err.Error(), tc.hint) {
					t.Errorf("%s = %v; want the hint %q", what, err, tc.hint)
				}
			}
			check("Migrate", s.Migrate(context.Background()))
			locks, err := core.New(s)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { locks.Close(context.Background()) })
			_, err = locks.Acquire(context.Background(), "report")
			check("Acquire", err)
		})
	}
}
