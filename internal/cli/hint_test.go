package cli

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
)

// listen serves every connection to a local listener with serve, until the
// test ends, and returns its address.
func listen(t *testing.T, serve func(net.Conn)) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Add(1)
			go func() { defer wg.Done(); serve(c) }()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return l.Addr().String()
}

// silent accepts and never answers: another service on the port, or a
// server that hangs.
func silent(c net.Conn) { io.Copy(io.Discard, c) }

// plainText answers whatever arrives first with a line of plain text, as
// a server without TLS that reads a TLS ClientHello as a command does.
func plainText(c net.Conn) {
	buf := make([]byte, 4096)
	if _, err := c.Read(buf); err != nil {
		return
	}
	io.WriteString(c, "-ERR unknown command\r\n")
	io.Copy(io.Discard, c)
}

// answering replies reply to every command (a RESP array, "*N") and to
// every inline line: a server that refuses the credentials answers every
// command of the client's handshake WRONGPASS.
func answering(reply string) func(net.Conn) {
	return func(c net.Conn) {
		r := bufio.NewReader(c)
		for {
			line, err := r.ReadString('\n')
			if err != nil && line == "" {
				return
			}
			if strings.HasPrefix(line, "$") { // a bulk string's length: skip its value
				continue
			}
			if strings.HasPrefix(line, "*") || err != nil {
				if _, err := io.WriteString(c, reply); err != nil {
					return
				}
			}
		}
	}
}

// TestOpenStoreHints opens Redis URLs against listeners that do what each
// hint names, and checks that the error carries that hint.
func TestOpenStoreHints(t *testing.T) {
	t.Parallel()
	closed := func() string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		return l.Addr().String()
	}()
	for _, tc := range []struct {
		name, url, hint string
	}{
		{"no answer", "redis://" + listen(t, silent) + "/0?dial_timeout=300ms",
			"no answer within the dial timeout"},
		{"TLS, no answer", "rediss://" + listen(t, silent) + "/0?dial_timeout=300ms",
			"no answer to the TLS handshake within the dial timeout"},
		{"TLS against plain text", "rediss://" + listen(t, plainText) + "/0?dial_timeout=5s",
			"answered a TLS handshake without TLS"},
		{"wrong password", "redis://app:wrong@" + listen(t, answering("-WRONGPASS invalid username-password pair or user is disabled.\r\n")) + "/0?dial_timeout=5s",
			"refused the user or password"},
		{"nothing listens", "redis://" + closed + "/0?dial_timeout=5s",
			"nothing listens at that address"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := openStore(context.Background(), tc.url)
			var hinted *hintedError
			if !errors.As(err, &hinted) {
				t.Fatalf("openStore(%q) = %v; want an error with a hint", tc.url, err)
			}
			if !strings.Contains(err.Error(), "hint: "+hinted.hint) || !strings.Contains(hinted.hint, tc.hint) {
				t.Errorf("openStore(%q) = %v; want the hint %q", tc.url, err, tc.hint)
			}
			if strings.Contains(err.Error(), "wrong") {
				t.Errorf("the error shows the password: %v", err)
			}
		})
	}
}

// TestWithHintNone: an error that shows no known cause gets no hint.
func TestWithHintNone(t *testing.T) {
	if err := withHint(io.EOF, "redis://h:6379/0"); err != io.EOF {
		t.Errorf("withHint(io.EOF) = %v, want io.EOF itself", err)
	}
}
