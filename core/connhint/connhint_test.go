package connhint_test

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold/core/connhint"
)

// serve accepts connections on a loopback listener and hands each to fn
// until the test ends.
func serve(t *testing.T, fn func(net.Conn)) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
			go fn(c)
		}
	}()
	return l.Addr().String()
}

// closedPort returns an address nothing listens at.
func closedPort(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// tlsDial runs a TLS handshake against addr, giving up after wait.
func tlsDial(addr string, wait time.Duration) error {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	return tls.Client(c, &tls.Config{InsecureSkipVerify: true}).HandshakeContext(ctx)
}

func TestHintsFromRealConnections(t *testing.T) {
	plainText := serve(t, func(c net.Conn) {
		// A server without TLS reads the ClientHello as a command.
		buf := make([]byte, 4096)
		if _, err := c.Read(buf); err == nil {
			io.WriteString(c, "-ERR unknown command\r\n")
		}
	})
	silent := serve(t, func(c net.Conn) { io.Copy(io.Discard, c) })

	_, refusedErr := net.Dial("tcp", closedPort(t))
	expired, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	_, dialTimeout := (&net.Dialer{}).DialContext(expired, "tcp", silent)
	silentTLS := tlsDial(silent, 200*time.Millisecond)

	for _, tc := range []struct {
		name      string
		err       error
		hint      string // from Hint
		connect   string // from HintConnect(err, true)
		noConnect string // from HintConnect(err, false)
	}{
		{"nothing listens", refusedErr, "nothing listens", "nothing listens", "nothing listens"},
		{"TLS against plain text", tlsDial(plainText, 5*time.Second), "without TLS", "without TLS", "without TLS"},
		{"dial timed out", dialTimeout, "no answer within the dial timeout", "TLS handshake", "no answer within the dial timeout"},
		// A handshake that times out on an open connection: only a caller
		// that knows it was connecting may call it a connection problem.
		{"silent server", silentTLS, "", "TLS handshake", "no answer within the dial timeout"},
		{"refused credentials", errors.New("WRONGPASS invalid username-password pair"), "refused the user or password", "refused the user or password", "refused the user or password"},
		{"a slow call", context.DeadlineExceeded, "", "TLS handshake", "no answer within the dial timeout"},
		{"another error", errors.New("ERR unknown command 'EVALSHA'"), "", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.err == nil {
				t.Fatal("the connection did not fail")
			}
			check := func(what, got, want string) {
				t.Helper()
				if want == "" && got != "" || !strings.Contains(got, want) {
					t.Errorf("%s(%v) = %q; want a hint with %q", what, tc.err, got, want)
				}
			}
			check("Hint", connhint.Hint(tc.err), tc.hint)
			check("HintConnect(tls)", connhint.HintConnect(tc.err, true), tc.connect)
			check("HintConnect(plain)", connhint.HintConnect(tc.err, false), tc.noConnect)
		})
	}
}

func TestWrap(t *testing.T) {
	if connhint.Wrap(nil) != nil {
		t.Error("Wrap(nil) != nil")
	}
	other := errors.New("ERR unknown command")
	if connhint.Wrap(other) != other {
		t.Error("Wrap of an error without a hint changed it")
	}
	_, refused := net.Dial("tcp", closedPort(t))
	err := connhint.Wrap(refused)
	var hinted *connhint.Error
	if !errors.As(err, &hinted) || !errors.Is(err, refused) {
		t.Fatalf("Wrap(%v) = %#v; want a *connhint.Error around it", refused, err)
	}
	if want := refused.Error() + " (hint: " + hinted.Hint + ")"; err.Error() != want {
		t.Errorf("Error() = %q; want %q", err.Error(), want)
	}
	if again := connhint.Wrap(err); again != err {
		t.Errorf("Wrap of a hinted error wrapped it again: %v", again)
	}
}

func TestWantsTLS(t *testing.T) {
	for raw, want := range map[string]bool{
		"redis://h:6379/0":                      false,
		"rediss://h:6379/0":                     true,
		"valkeys://h:6379/0":                    true,
		"postgres://u@h/db?sslmode=disable":     false,
		"postgres://u@h/db?sslmode=verify-full": true,
		"mysql://u@h/db?tls=true":               true,
		"mysql://u@h/db":                        false,
		"::not a url":                           false,
	} {
		if got := connhint.WantsTLS(raw); got != want {
			t.Errorf("WantsTLS(%q) = %v, want %v", raw, got, want)
		}
	}
}
