package testserver

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Server is a private server instance of one test: its own process, port
// and data directory, on loopback, never a shared server. A test may stop,
// kill and restart it. It is killed and its directory removed when the test
// ends. Get one from [PrivatePostgres], [PrivateMariaDB] or [PrivateRedis].
type Server struct {
	// Kind names the server, for messages: "PostgreSQL", "MariaDB", "Redis".
	Kind string
	// DSN is how to reach it: for database/sql driver "pgx", for
	// go-sql-driver/mysql, or a redis:// URL.
	DSN string
	// Port is the port it listens on, on 127.0.0.1.
	Port int

	t       testing.TB
	dir     string
	dsnAt   func(addr string) string // DSN with its address replaced
	command func() *exec.Cmd         // the server's command line, run as its user
	ready   func(ctx context.Context) error
	stop    syscall.Signal // the signal of a clean, fast shutdown

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
}

// privateStartTimeout bounds a private server's start, including its
// recovery after a kill.
const privateStartTimeout = 60 * time.Second

// Addr returns the server's address, host:port.
func (s *Server) Addr() string { return "127.0.0.1:" + strconv.Itoa(s.Port) }

// DSNAt returns the server's DSN with addr (host:port) for its address:
// the DSN of a [Proxy] in front of it.
func (s *Server) DSNAt(addr string) string { return s.dsnAt(addr) }

// PID returns the server process's id, or 0 when it is not running.
func (s *Server) PID() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

// Start starts the server (again, on the same port and data) and returns
// once it answers. A server that exits at start is started again until
// privateStartTimeout: after a kill, PostgreSQL's backends outlive the
// postmaster for a moment, holding its shared memory, and a postmaster
// started beside them refuses to run.
func (s *Server) Start() {
	s.t.Helper()
	s.mu.Lock()
	running := s.cmd != nil
	s.mu.Unlock()
	if running {
		s.t.Fatalf("testserver: private %s already running", s.Kind)
	}
	ctx, cancel := context.WithTimeout(context.Background(), privateStartTimeout)
	defer cancel()
	exited := s.launch()
	for {
		err := s.ready(ctx)
		if err == nil {
			return
		}
		select {
		case <-exited:
			s.forget()
			if ctx.Err() != nil {
				s.t.Fatalf("testserver: private %s exited at start: %v\n%s", s.Kind, err, s.logTail())
			}
			time.Sleep(200 * time.Millisecond)
			exited = s.launch()
		case <-ctx.Done():
			s.Kill()
			s.t.Fatalf("testserver: private %s not ready within %v: %v\n%s", s.Kind, privateStartTimeout, err, s.logTail())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// launch starts the server's process, and returns a channel closed when it
// exits.
func (s *Server) launch() chan struct{} {
	s.t.Helper()
	cmd := s.command()
	logf, err := os.OpenFile(filepath.Join(s.dir, "server.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o666)
	if err != nil {
		s.t.Fatalf("testserver: private %s: %v", s.Kind, err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		s.t.Fatalf("testserver: start private %s: %v", s.Kind, err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		logf.Close()
		close(exited)
	}()
	s.mu.Lock()
	s.cmd, s.exited = cmd, exited
	s.mu.Unlock()
	return exited
}

// Stop shuts the server down cleanly and fast (PostgreSQL's fast shutdown:
// open connections are ended) and waits for its process to exit.
func (s *Server) Stop() { s.signal(s.stop) }

// Kill kills the server process (SIGKILL), as a crash would, and waits for
// it to exit. Start recovers it from its data directory.
func (s *Server) Kill() { s.signal(syscall.SIGKILL) }

// Restart stops the server cleanly and starts it again.
func (s *Server) Restart() {
	s.t.Helper()
	s.Stop()
	s.Start()
}

func (s *Server) signal(sig syscall.Signal) {
	s.mu.Lock()
	cmd, exited := s.cmd, s.exited
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(sig)
	select {
	case <-exited:
	case <-time.After(privateStartTimeout):
		_ = cmd.Process.Kill()
		<-exited
	}
	s.forget()
}

func (s *Server) forget() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cmd, s.exited = nil, nil
}

// logTail returns the end of the server's log, for failure messages.
func (s *Server) logTail() string {
	b, _ := os.ReadFile(filepath.Join(s.dir, "server.log"))
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// serverUser is the account a private server runs as: servers refuse to run
// as root, so as root the test runs them as their packages' own user.
type serverUser struct {
	cred *syscall.Credential // nil: the test's own user
}

// lookupServerUser returns the user to run a server as, or an error saying
// why none fits.
func lookupServerUser(name string) (serverUser, error) {
	if os.Geteuid() != 0 {
		return serverUser{}, nil
	}
	u, err := user.Lookup(name)
	if err != nil {
		return serverUser{}, fmt.Errorf("running as root, and no user %q to run the server as: %w", name, err)
	}
	uid, _ := strconv.ParseUint(u.Uid, 10, 32)
	gid, _ := strconv.ParseUint(u.Gid, 10, 32)
	return serverUser{cred: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}, nil
}

// command returns a command that runs as the user.
func (u serverUser) command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	// A process group of its own: a Ctrl-C on the test does not reach it
	// before the cleanup does.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: u.cred}
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	return cmd
}

// mkdir creates a directory the user owns.
func (u serverUser) mkdir(t testing.TB, kind string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "leasehold-"+strings.ToLower(kind)+"-")
	if err != nil {
		t.Fatalf("testserver: private %s: %v", kind, err)
	}
	if u.cred != nil {
		if err := os.Chown(dir, int(u.cred.Uid), int(u.cred.Gid)); err != nil {
			os.RemoveAll(dir)
			t.Fatalf("testserver: private %s: %v", kind, err)
		}
	}
	return dir
}

// run runs a setup command as the user and fails t with its output if it
// fails.
func (u serverUser) run(t testing.TB, kind, name string, args ...string) {
	t.Helper()
	if out, err := u.command(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("testserver: private %s: %s: %v\n%s", kind, filepath.Base(name), err, out)
	}
}

// findBinary returns the first of paths that exists, then looks name up in
// PATH.
func findBinary(name string, paths ...string) (string, error) {
	for _, p := range paths {
		if matches, _ := filepath.Glob(p); len(matches) > 0 {
			return matches[len(matches)-1], nil
		}
	}
	return exec.LookPath(name)
}

// freePort returns a loopback port that was free a moment ago.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("testserver: free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startPrivate starts s and arranges for it to be killed and its directory
// removed when the test ends.
func startPrivate(t testing.TB, s *Server) *Server {
	t.Helper()
	t.Cleanup(func() {
		s.Kill()
		os.RemoveAll(s.dir)
	})
	s.Start()
	return s
}

// dialReady is a ready check for servers whose protocol the test does not
// speak: the port accepts connections.
func dialReady(addr string) func(context.Context) error {
	return func(ctx context.Context) error {
		var d net.Dialer
		c, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return err
		}
		return c.Close()
	}
}
