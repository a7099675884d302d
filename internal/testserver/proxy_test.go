package testserver

import (
	"bufio"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// echoServer answers every line with the same line, upper-cased, but for
// lines that start with "quiet", which it reads without answering.
func echoServer(t *testing.T) string {
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
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					if strings.HasPrefix(line, "quiet") {
						continue
					}
					if _, err := io.WriteString(c, strings.ToUpper(line)); err != nil {
						return
					}
				}
			}()
		}
	}()
	return l.Addr().String()
}

type echoClient struct {
	c net.Conn
	r *bufio.Reader
}

func dialEcho(t *testing.T, addr string) *echoClient {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &echoClient{c, bufio.NewReader(c)}
}

// call sends line and waits up to timeout for the answer.
func (e *echoClient) call(line string, timeout time.Duration) (string, error) {
	e.c.SetDeadline(time.Now().Add(timeout))
	if _, err := io.WriteString(e.c, line+"\n"); err != nil {
		return "", err
	}
	got, err := e.r.ReadString('\n')
	return strings.TrimSuffix(got, "\n"), err
}

func TestProxy(t *testing.T) {
	p := NewProxy(t, echoServer(t))
	c := dialEcho(t, p.Addr())
	if got, err := c.call("hello", 5*time.Second); err != nil || got != "HELLO" {
		t.Fatalf("through the proxy: %q, %v", got, err)
	}
	if n := p.Requests(); n != 1 {
		t.Fatalf("Requests() = %d after one round trip", n)
	}

	// A message with no reply costs no round trip: it counts with the
	// next request.
	if _, err := io.WriteString(c.c, "quiet\n"); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); p.Requests() < 2; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the proxy never read the quiet line")
		}
	}
	if got, err := c.call("again", 5*time.Second); err != nil || got != "AGAIN" {
		t.Fatalf("after a quiet line: %q, %v", got, err)
	}
	if n, r := p.RoundTrips(), p.Requests(); n != 2 || r != 3 {
		t.Fatalf("RoundTrips() = %d, Requests() = %d after two calls and a message without a reply; want 2 and 3", n, r)
	}

	p.SetLatency(50 * time.Millisecond)
	start := time.Now()
	if got, err := c.call("slow", 5*time.Second); err != nil || got != "SLOW" {
		t.Fatalf("with latency: %q, %v", got, err)
	}
	if rtt := time.Since(start); rtt < 100*time.Millisecond {
		t.Fatalf("a round trip with 50ms latency each way took %v", rtt)
	}
	p.SetLatency(0)

	p.Stall()
	if _, err := c.call("stalled", 200*time.Millisecond); !isTimeout(err) {
		t.Fatalf("a stalled call: %v, want a timeout", err)
	}
	p.Resume()
	// The held-back request goes through on resume; its answer is next.
	c.c.SetDeadline(time.Now().Add(5 * time.Second))
	if got, err := c.r.ReadString('\n'); err != nil || got != "STALLED\n" {
		t.Fatalf("after resume: %q, %v", got, err)
	}

	if n := p.ResetAll(); n != 1 {
		t.Fatalf("ResetAll reset %d connections, want 1", n)
	}
	if _, err := c.call("after reset", 5*time.Second); err == nil {
		t.Fatal("a reset connection still answers")
	}

	p.Refuse(true)
	// The reset may come while dialling or on the first call.
	conn, err := net.DialTimeout("tcp", p.Addr(), 5*time.Second)
	if err == nil {
		conn.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err = io.WriteString(conn, "refused\n"); err == nil {
			_, err = bufio.NewReader(conn).ReadString('\n')
		}
		conn.Close()
	}
	if err == nil || isTimeout(err) {
		t.Fatalf("a refused connection: %v, want a reset", err)
	}
	p.Refuse(false)

	c = dialEcho(t, p.Addr())
	cut := p.CutReply([]byte("commit"))
	if got, err := c.call("select", 5*time.Second); err != nil || got != "SELECT" {
		t.Fatalf("before the cut request: %q, %v", got, err)
	}
	if _, err := c.call("commit", 5*time.Second); err == nil || isTimeout(err) {
		t.Fatalf("the cut reply: %v, want a reset", err)
	}
	// The client may see the reset before the proxy closes the channel.
	select {
	case <-cut:
	case <-time.After(5 * time.Second):
		t.Fatal("CutReply's channel is still open 5s after the cut")
	}
	c = dialEcho(t, p.Addr())
	if got, err := c.call("commit", 5*time.Second); err != nil || got != "COMMIT" {
		t.Fatalf("a cut is one-shot: %q, %v", got, err)
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
