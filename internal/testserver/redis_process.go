package testserver

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// RedisProcess is a redis-server of one test's own, on a loopback port,
// without persistence: unlike the shared servers, the test may stop,
// restart or flush it. It is stopped by its PID when the test ends.
type RedisProcess struct {
	// Addr is host:port, on 127.0.0.1.
	Addr string
	args []string
	dir  string

	mu     sync.Mutex
	cmd    *exec.Cmd  // nil while stopped
	exited chan error // cmd.Wait's result
}

// StartRedis starts a redis-server from PATH on a free loopback port, with
// no RDB snapshots and no AOF (a restart loses every key), plus args (such
// as "--replicaof", "127.0.0.1", "6380"). Without a redis-server binary the
// test is skipped (fails under CI=true).
func StartRedis(t testing.TB, args ...string) *RedisProcess {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		unavailable(t, "no redis-server binary on PATH for a private Redis server: %v", err)
	}
	port, err := freePort()
	if err != nil {
		t.Fatalf("testserver: %v", err)
	}
	r := &RedisProcess{Addr: net.JoinHostPort("127.0.0.1", port), args: args, dir: t.TempDir()}
	t.Cleanup(r.Stop)
	r.Start(t)
	return r
}

// URL returns redis://Addr/0.
func (r *RedisProcess) URL() string { return "redis://" + r.Addr + "/0" }

// Start starts the server again after [RedisProcess.Stop], on the same
// port, with no keys, and waits until it answers PING.
func (r *RedisProcess) Start(t testing.TB) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cmd != nil {
		t.Fatalf("testserver: redis-server on %s is running already", r.Addr)
	}
	_, port, _ := net.SplitHostPort(r.Addr)
	args := append([]string{"--bind", "127.0.0.1", "--port", port, "--dir", r.dir,
		"--save", "", "--appendonly", "no", "--daemonize", "no", "--logfile", ""}, r.args...)
	cmd := exec.Command("redis-server", args...)
	// A file, not a pipe: a child the server forks (to sync a replica)
	// would hold a pipe open, and Wait with it.
	logPath := filepath.Join(r.dir, "redis.log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatalf("testserver: %v", err)
	}
	defer logFile.Close()
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatalf("testserver: start redis-server: %v", err)
	}
	out := func() string { b, _ := os.ReadFile(logPath); return string(b) }
	r.cmd = cmd
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := redisDoAt(r.Addr, redisAuth{}, "PING"); err == nil {
			break
		}
		select {
		case err := <-exited:
			r.cmd = nil
			t.Fatalf("testserver: redis-server on %s exited: %v\n%s", r.Addr, err, out())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("testserver: redis-server on %s does not answer PING\n%s", r.Addr, out())
		}
	}
	r.exited = exited
}

// Do runs one command on the server and returns the reply's first line.
func (r *RedisProcess) Do(args ...string) (string, error) {
	return redisDoAt(r.Addr, redisAuth{}, args...)
}

// Stop kills the server (SIGKILL, by its PID: a crash, saving nothing) and
// waits until it is gone. Stopping a stopped server does nothing.
func (r *RedisProcess) Stop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cmd == nil {
		return
	}
	r.cmd.Process.Kill() //nolint:errcheck // it may have exited already
	<-r.exited
	r.cmd = nil
}

// Restart kills the server and starts it again, empty, on the same port.
func (r *RedisProcess) Restart(t testing.TB) {
	t.Helper()
	r.Stop()
	r.Start(t)
}

func (r *RedisProcess) String() string { return fmt.Sprintf("redis-server on %s", r.Addr) }
