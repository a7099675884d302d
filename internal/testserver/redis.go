package testserver

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Redis returns the URL of a Redis server (redis://host:port/db) and a key
// prefix of the test's own ("lh_<random>:"). Keys under the prefix are
// deleted when t ends.
func Redis(t testing.TB) (redisURL, prefix string) {
	t.Helper()
	redisURL = os.Getenv(EnvRedis)
	if redisURL == "" {
		redisURL = fromContainer(t, &redisContainer, "Redis", EnvRedis, startRedis)
	}
	prefix = randomName("lh_") + ":"
	if _, err := redisDo(redisURL, "PING"); err != nil {
		t.Fatalf("testserver: Redis at %s: %v", redactURL(redisURL), err)
	}
	t.Cleanup(func() {
		// Redis runs the script atomically; unpack in slices stays under
		// Lua's stack limit.
		const script = `local ks = redis.call('KEYS', ARGV[1])
for i = 1, #ks, 1000 do redis.call('DEL', unpack(ks, i, math.min(i + 999, #ks))) end
return #ks`
		if _, err := redisDo(redisURL, "EVAL", script, "0", prefix+"*"); err != nil {
			t.Errorf("testserver: delete Redis keys %s*: %v", prefix, err)
		}
	})
	return redisURL, prefix
}

// redisDo runs one command on a new connection to the server of rawURL,
// after AUTH and SELECT as the URL says, and returns the reply's first line.
func redisDo(rawURL string, args ...string) (string, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "", err
	}
	if u.Scheme != "redis" {
		return "", fmt.Errorf("want a redis:// URL, got scheme %q", u.Scheme)
	}
	host := u.Host
	if u.Port() == "" {
		host = net.JoinHostPort(u.Hostname(), "6379")
	}
	c, err := net.DialTimeout("tcp", host, 5*time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(setupTimeout)) //nolint:errcheck
	r := bufio.NewReader(c)
	do := func(args ...string) (string, error) {
		var b strings.Builder
		fmt.Fprintf(&b, "*%d\r\n", len(args))
		for _, a := range args {
			fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
		}
		if _, err := io.WriteString(c, b.String()); err != nil {
			return "", err
		}
		return readReply(r)
	}
	if pw, ok := u.User.Password(); ok {
		auth := []string{"AUTH", pw}
		if name := u.User.Username(); name != "" {
			auth = []string{"AUTH", name, pw}
		}
		if _, err := do(auth...); err != nil {
			return "", fmt.Errorf("AUTH: %w", err)
		}
	}
	if db := strings.Trim(u.Path, "/"); db != "" && db != "0" {
		if _, err := do("SELECT", db); err != nil {
			return "", fmt.Errorf("SELECT %s: %w", db, err)
		}
	}
	return do(args...)
}

// readReply reads one RESP reply, returning its first line and skipping
// the elements of arrays.
func readReply(r *bufio.Reader) (string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	line = strings.TrimSuffix(line, "\r\n")
	if line == "" {
		return "", errors.New("empty reply")
	}
	switch line[0] {
	case '-':
		return "", errors.New(line[1:])
	case '$':
		n, err := strconv.Atoi(line[1:])
		if err != nil || n < 0 {
			return line, err
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return "", err
		}
		return string(buf[:n]), nil
	case '*':
		n, err := strconv.Atoi(line[1:])
		if err != nil {
			return "", err
		}
		for range max(n, 0) {
			if _, err := readReply(r); err != nil {
				return "", err
			}
		}
	}
	return line, nil
}
