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
		if _, err := redisDo(redisURL, "EVAL", deleteKeysScript, "0", prefix+"*"); err != nil {
			t.Errorf("testserver: delete Redis keys %s*: %v", prefix, err)
		}
	})
	return redisURL, prefix
}

// deleteKeysScript deletes the keys that match ARGV[1], one DEL each (a
// Cluster node refuses a DEL of keys in several slots). Redis runs the
// script atomically; a test's keys are few.
const deleteKeysScript = `local ks = redis.call('KEYS', ARGV[1])
for _, k in ipairs(ks) do redis.call('DEL', k) end
return #ks`

// redisAuth is what a Redis URL says about logging in.
type redisAuth struct {
	user, password string
	db             string // "" or "0": no SELECT
}

// parseRedisURL splits a redis:// URL into its address and login.
func parseRedisURL(rawURL string) (addr string, auth redisAuth, err error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "", auth, err
	}
	if u.Scheme != "redis" {
		return "", auth, fmt.Errorf("want a redis:// URL, got scheme %q", u.Scheme)
	}
	auth.user = u.User.Username()
	auth.password, _ = u.User.Password()
	auth.db = strings.Trim(u.Path, "/")
	return redisAddr(u.Host), auth, nil
}

// redisAddr adds Redis's default port to host if it has none.
func redisAddr(host string) string {
	if _, _, err := net.SplitHostPort(host); err != nil {
		return net.JoinHostPort(strings.Trim(host, "[]"), "6379")
	}
	return host
}

// redisDo runs one command on a new connection to the server of rawURL,
// after AUTH and SELECT as the URL says, and returns the reply's first line.
func redisDo(rawURL string, args ...string) (string, error) {
	addr, auth, err := parseRedisURL(rawURL)
	if err != nil {
		return "", err
	}
	return redisDoAt(addr, auth, args...)
}

// redisDoAt runs one command on a new connection to addr, after AUTH and
// SELECT as auth says, and returns the reply's first line (a bulk string
// whole).
func redisDoAt(addr string, auth redisAuth, args ...string) (string, error) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
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
	if auth.password != "" {
		login := []string{"AUTH", auth.password}
		if auth.user != "" {
			login = []string{"AUTH", auth.user, auth.password}
		}
		if _, err := do(login...); err != nil {
			return "", fmt.Errorf("AUTH: %w", err)
		}
	}
	if auth.db != "" && auth.db != "0" {
		if _, err := do("SELECT", auth.db); err != nil {
			return "", fmt.Errorf("SELECT %s: %w", auth.db, err)
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
