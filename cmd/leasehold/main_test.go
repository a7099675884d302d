package main

// End-to-end tests of the leasehold command: the binary is built once, and
// every test runs it as a process, on a SQLite file of its own (and on
// PostgreSQL, MySQL, Redis and a Redis Cluster when LEASEHOLD_TEST_POSTGRES,
// LEASEHOLD_TEST_MYSQL, LEASEHOLD_TEST_REDIS and LEASEHOLD_TEST_REDIS_CLUSTER
// name servers, and on a redis-server of its own).

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/leasehold/leasehold/core/coretest"
	"github.com/leasehold/leasehold/internal/gocmd"
	"github.com/redis/rueidis"
)

// bin is the leasehold binary built by TestMain.
var bin string

func TestMain(m *testing.M) {
	// These tests mostly wait for processes: run more of them at once than
	// the default (GOMAXPROCS), unless -test.parallel says otherwise.
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		flag.Set("test.parallel", "8")
	}
	dir, err := os.MkdirTemp("", "leasehold-cmd-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin = filepath.Join(dir, "leasehold")
	args := append([]string{"build", "-o", bin}, gocmd.BuildFlags()...)
	build := exec.Command(gocmd.Path(), append(args, ".")...)
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// result is what a leasehold process did.
type result struct {
	stdout, stderr string
	code           int
	took           time.Duration
}

// proc is a leasehold process started in the background.
type proc struct {
	cmd            *exec.Cmd
	stdout, stderr *coretest.LogBuffer
	done           chan result
}

// start runs leasehold with args in dir, with a clean LEASEHOLD_STORE and
// XDG_STATE_HOME in dir, so that no test touches the user's state.
func start(t *testing.T, dir string, args ...string) *proc {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	// The race detector's exit pause (1s by default) would slow every run.
	cmd.Env = append(os.Environ(), "LEASEHOLD_STORE=", "XDG_STATE_HOME="+filepath.Join(dir, "state"), "GORACE=atexit_sleep_ms=0")
	p := &proc{cmd: cmd, stdout: &coretest.LogBuffer{}, stderr: &coretest.LogBuffer{}, done: make(chan result, 1)}
	cmd.Stdout, cmd.Stderr = p.stdout, p.stderr
	began := time.Now()
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("start leasehold: %v", err)
	}
	go func() {
		defer cancel()
		err := cmd.Wait()
		code := cmd.ProcessState.ExitCode()
		if err != nil && code < 0 {
			code = -1
		}
		p.done <- result{stdout: p.stdout.String(), stderr: p.stderr.String(), code: code, took: time.Since(began)}
	}()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			syscall.Kill(cmd.Process.Pid, syscall.SIGCONT)
			cmd.Process.Kill()
		}
	})
	return p
}

func (p *proc) wait(t *testing.T) result {
	t.Helper()
	select {
	case r := <-p.done:
		if strings.Contains(r.stderr, "WARNING: DATA RACE") {
			t.Errorf("leasehold %v: the race detector found a race:\n%s", p.cmd.Args[1:], r.stderr)
		}
		return r
	case <-time.After(60 * time.Second):
		t.Fatalf("leasehold %v did not exit; stderr so far:\n%s", p.cmd.Args[1:], p.stderr.String())
		return result{}
	}
}

// lh runs leasehold with args in dir and waits for it.
func lh(t *testing.T, dir string, args ...string) result {
	t.Helper()
	return start(t, dir, args...).wait(t)
}

func sqliteURL(dir string) string { return "sqlite://" + filepath.Join(dir, "locks.db") }

// waitForFile waits until path exists.
func waitForFile(t *testing.T, path string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !fileExists(path) {
		if time.Now().After(deadline) {
			t.Fatalf("%s did not appear", path)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitForOutput waits until out holds want.
func waitForOutput(t *testing.T, out *coretest.LogBuffer, want string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(out.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("no %q in the output:\n%s", want, out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// runnerOf returns the pid of the runner that supervisor pid started: the
// process of leasehold run that takes and renews the lease.
func runnerOf(t *testing.T, pid int) int {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		out, _ := exec.Command("ps", "-A", "-o", "pid=,ppid=,args=").Output()
		for _, line := range strings.Split(string(out), "\n") {
			f := strings.Fields(line)
			if len(f) >= 3 && f[1] == strconv.Itoa(pid) && slices.Contains(f[2:], "_runner") {
				n, _ := strconv.Atoi(f[0])
				return n
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("no runner under leasehold %d", pid)
	return 0
}

// holdScript is a command that says it started (touching started) and
// then runs until release appears.
func holdScript(dir string) []string {
	return []string{"sh", "-c", `touch "$0"; while [ ! -e "$1" ]; do sleep 0.02; done`,
		filepath.Join(dir, "started"), filepath.Join(dir, "release")}
}

// checkOneLineError checks that a failure said what went wrong on one line
// of stderr, with no trace of a crash.
func checkOneLineError(t *testing.T, r result, want string) {
	t.Helper()
	msg := strings.TrimSuffix(r.stderr, "\n")
	if msg == "" || strings.Contains(msg, "\n") {
		t.Errorf("stderr is not one line:\n%s", r.stderr)
	}
	for _, bad := range []string{"goroutine", "panic", "runtime."} {
		if strings.Contains(r.stderr, bad) {
			t.Errorf("stderr mentions %q:\n%s", bad, r.stderr)
		}
	}
	if !strings.Contains(msg, want) {
		t.Errorf("stderr = %q, want it to mention %q", msg, want)
	}
}

func TestHelp(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, args := range [][]string{{"help"}, {"-h"}, {"--help"}} {
		r := lh(t, dir, args...)
		if r.code != 0 || !strings.Contains(r.stdout, "leasehold run [flags] -- command") {
			t.Errorf("leasehold %v: code %d, stdout:\n%s", args, r.code, r.stdout)
		}
	}
	r := lh(t, dir, "help", "run")
	for _, want := range []string{"75", "76", "LEASEHOLD_FENCING_TOKEN", "--grace"} {
		if r.code != 0 || !strings.Contains(r.stdout, want) {
			t.Errorf("leasehold help run: code %d, no %q in:\n%s", r.code, want, r.stdout)
		}
	}
	r = lh(t, dir, "run", "-h")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "Usage: leasehold run") {
		t.Errorf("leasehold run -h: code %d, stdout:\n%s", r.code, r.stdout)
	}
	r = lh(t, dir)
	if r.code != 2 || !strings.Contains(r.stderr, "Usage:") {
		t.Errorf("leasehold without arguments: code %d, stderr:\n%s", r.code, r.stderr)
	}
	// An installed binary's user has no clone: help names what they can
	// read, not a path in the repository.
	r = lh(t, dir, "help")
	for _, want := range []string{`"The leasehold command"`, "go doc github.com/leasehold/leasehold/core", "https://pkg.go.dev/github.com/leasehold/leasehold/core"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("leasehold help does not point to %s:\n%s", want, r.stdout)
		}
	}
	if strings.Contains(r.stdout, "docs/") {
		t.Errorf("leasehold help names a repository path:\n%s", r.stdout)
	}
}

// TestVersion: built from a clone, the command says so: "(devel)", or the
// pseudo-version Go stamps from the clone's VCS.
func TestVersion(t *testing.T) {
	t.Parallel()
	r := lh(t, t.TempDir(), "version")
	if ok, _ := regexp.MatchString(`^leasehold (\(devel\)|v0\.0\.0-\S+), built with go1\.\d+\S*(, from revision [0-9a-f]{12}( with local changes)?)?\n$`, r.stdout); r.code != 0 || !ok {
		t.Errorf("leasehold version: code %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
}

// TestRunOneAtATime starts three runs of a command on one key at once: the
// command runs three times, never two at once, with growing tokens.
func TestRunOneAtATime(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	log := filepath.Join(dir, "log")
	script := `echo "start $LEASEHOLD_KEY $LEASEHOLD_FENCING_TOKEN" >> "$0"; sleep 0.3; echo "end $LEASEHOLD_KEY $LEASEHOLD_FENCING_TOKEN" >> "$0"`
	var procs []*proc
	for range 3 {
		procs = append(procs, start(t, dir, "run", "--store", sqliteURL(dir), "--key", "exclusive", "--wait", "40s", "--", "sh", "-c", script, log))
	}
	for _, p := range procs {
		if r := p.wait(t); r.code != 0 {
			t.Fatalf("run: code %d, stderr:\n%s", r.code, r.stderr)
		}
	}
	data, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != 6 {
		t.Fatalf("log has %d lines, want 6:\n%s", len(lines), data)
	}
	last := int64(0)
	for i := 0; i < len(lines); i += 2 {
		var token, endToken int64
		if _, err := fmt.Sscanf(lines[i], "start exclusive %d", &token); err != nil {
			t.Fatalf("line %d = %q, want a start: %v\n%s", i+1, lines[i], err, data)
		}
		if _, err := fmt.Sscanf(lines[i+1], "end exclusive %d", &endToken); err != nil || endToken != token {
			t.Fatalf("line %d = %q, want the end of token %d (runs overlapped):\n%s", i+2, lines[i+1], token, data)
		}
		if token <= last {
			t.Fatalf("token %d after %d: tokens must grow:\n%s", token, last, data)
		}
		last = token
	}
}

// TestRunNotAcquired: while the key is held, a run without --wait exits 75
// at once without running its command, silently unless -v; with a --wait
// that the holder outlasts, it exits 75 after the wait; with -v it says who
// holds the key.
func TestRunNotAcquired(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	holder := start(t, dir, append([]string{"run", "--store", sqliteURL(dir), "--key", "busy", "--"}, holdScript(dir)...)...)
	waitForFile(t, filepath.Join(dir, "started"))

	marker := filepath.Join(dir, "ran")
	other := []string{"--", "touch", marker}
	r := lh(t, dir, append([]string{"run", "--store", sqliteURL(dir), "--key", "busy"}, other...)...)
	if r.code != 75 || r.stderr != "" {
		t.Errorf("run on a held key: code %d, stderr %q; want 75 and silence", r.code, r.stderr)
	}
	r = lh(t, dir, append([]string{"run", "--store", sqliteURL(dir), "--key", "busy", "--wait", "300ms"}, other...)...)
	if r.code != 75 || r.took < 300*time.Millisecond {
		t.Errorf("run --wait 300ms on a held key: code %d after %v; want 75 after the wait", r.code, r.took)
	}
	r = lh(t, dir, append([]string{"run", "-v", "--store", sqliteURL(dir), "--key", "busy"}, other...)...)
	if r.code != 75 || !regexp.MustCompile(`"busy" is held by \S+:\d+ \(token 1, expires in`).MatchString(r.stderr) {
		t.Errorf("run -v on a held key: code %d, stderr:\n%s", r.code, r.stderr)
	}
	if fileExists(marker) {
		t.Error("the command ran without the lease")
	}

	// A waiting run goes once the holder is done.
	waiter := start(t, dir, append([]string{"run", "-v", "--store", sqliteURL(dir), "--key", "busy", "--wait", "40s"}, other...)...)
	waitForOutput(t, waiter.stderr, "waiting up to 40s")
	if fileExists(marker) {
		t.Fatal("the waiting run did not wait")
	}
	os.WriteFile(filepath.Join(dir, "release"), nil, 0o600)
	if r := holder.wait(t); r.code != 0 {
		t.Fatalf("holder: code %d, stderr:\n%s", r.code, r.stderr)
	}
	if r := waiter.wait(t); r.code != 0 || !fileExists(marker) {
		t.Fatalf("waiter: code %d, ran %v, stderr:\n%s", r.code, fileExists(marker), r.stderr)
	}
}

// TestRunLostLease freezes the runner, the process of leasehold run that
// renews the lease (SIGSTOP), past its ttl: the supervisor stops the
// command with SIGTERM before the lease's deadline; when the runner
// resumes, it says the lease was lost, and leasehold exits 76; the key is
// free afterwards.
func TestRunLostLease(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	started, termed := filepath.Join(dir, "started"), filepath.Join(dir, "termed")
	script := `trap 'touch "$1"; exit 0' TERM; touch "$0"; while :; do sleep 0.05; done`
	p := start(t, dir, "run", "--store", sqliteURL(dir), "--key", "frozen", "--ttl", "3s", "--", "sh", "-c", script, started, termed)
	waitForFile(t, started)
	runner := runnerOf(t, p.cmd.Process.Pid)
	if err := syscall.Kill(runner, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	// No other process touches the file meanwhile: SIGSTOP may have caught
	// the runner inside a write, holding SQLite's write lock.
	waitForFile(t, termed)
	if err := syscall.Kill(runner, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	r := p.wait(t)
	if r.code != 76 {
		t.Fatalf("code %d, want 76; stderr:\n%s", r.code, r.stderr)
	}
	if !fileExists(termed) {
		t.Error("the command did not get SIGTERM")
	}
	if !strings.Contains(r.stderr, `giving up the lease on "frozen"`) {
		t.Errorf("stderr does not report the loss:\n%s", r.stderr)
	}
	if r := lh(t, dir, "run", "--store", sqliteURL(dir), "--key", "frozen", "--", "true"); r.code != 0 {
		t.Errorf("run on the key after the loss: code %d, stderr:\n%s", r.code, r.stderr)
	}
}

// TestRunLostLeaseKill: a command that ignores SIGTERM is killed after
// --grace when the runner freezes.
func TestRunLostLeaseKill(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	started := filepath.Join(dir, "started")
	script := `trap '' TERM; touch "$0"; while :; do sleep 0.05; done`
	p := start(t, dir, "run", "--store", sqliteURL(dir), "--key", "stubborn", "--ttl", "3s", "--grace", "300ms", "--", "sh", "-c", script, started)
	waitForFile(t, started)
	runner := runnerOf(t, p.cmd.Process.Pid)
	syscall.Kill(runner, syscall.SIGSTOP)
	waitForOutput(t, p.stderr, "SIGKILL")
	syscall.Kill(runner, syscall.SIGCONT)
	r := p.wait(t)
	if r.code != 76 || !strings.Contains(r.stderr, "SIGKILL") {
		t.Fatalf("code %d, want 76 after a SIGKILL; stderr:\n%s", r.code, r.stderr)
	}
}

func TestRunExitStatus(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, tc := range []struct {
		script string
		want   int
	}{
		{"exit 0", 0},
		{"exit 3", 3},
		{"exit 75", 75}, // the command's own 75 passes through too
		{"kill -KILL $$", 128 + 9},
	} {
		r := lh(t, dir, "run", "--store", sqliteURL(dir), "--key", "status", "--", "sh", "-c", tc.script)
		if r.code != tc.want {
			t.Errorf("%q: code %d, want %d; stderr:\n%s", tc.script, r.code, tc.want, r.stderr)
		}
	}
}

// TestRunEnvironment: the command gets the key and token, and the lease is
// released when it exits (the next run gets the next token at once).
func TestRunEnvironment(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	env := func() (string, string) {
		r := lh(t, dir, "run", "--store", sqliteURL(dir), "--", "sh", "-c", `echo "$LEASEHOLD_KEY $LEASEHOLD_FENCING_TOKEN"`)
		if r.code != 0 {
			t.Fatalf("code %d, stderr:\n%s", r.code, r.stderr)
		}
		key, token, _ := strings.Cut(strings.TrimSpace(r.stdout), " ")
		return key, token
	}
	key, token := env()
	if key != "sh" || token != "1" {
		t.Errorf("first run: LEASEHOLD_KEY %q, LEASEHOLD_FENCING_TOKEN %q; want sh (the command's name) and 1", key, token)
	}
	if _, token = env(); token != "2" {
		t.Errorf("second run: LEASEHOLD_FENCING_TOKEN %q, want 2", token)
	}
}

// TestRunForwardsSignals: each forwarded signal reaches the command, whose
// exit status leasehold passes on, and the lease is released after it.
func TestRunForwardsSignals(t *testing.T) {
	t.Parallel()
	for i, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT} {
		t.Run(sig.String(), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			started := filepath.Join(dir, "started")
			code := 10 + i
			script := fmt.Sprintf(`trap 'exit %d' %s; touch "$0"; while :; do sleep 0.05; done`, code, strings.TrimPrefix(signalName(sig), "SIG"))
			p := start(t, dir, "run", "--store", sqliteURL(dir), "--key", "signals", "--", "sh", "-c", script, started)
			waitForFile(t, started)
			if err := p.cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			if r := p.wait(t); r.code != code {
				t.Fatalf("code %d, want %d (the command's exit on %v); stderr:\n%s", r.code, code, sig, r.stderr)
			}
			if r := lh(t, dir, "run", "--store", sqliteURL(dir), "--key", "signals", "--", "true"); r.code != 0 {
				t.Errorf("the lease was not released: code %d, stderr:\n%s", r.code, r.stderr)
			}
		})
	}
}

// TestRunSignalWhileWaiting: a signal ends a --wait; the command never runs.
func TestRunSignalWhileWaiting(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	holder := start(t, dir, append([]string{"run", "--store", sqliteURL(dir), "--key", "w", "--"}, holdScript(dir)...)...)
	waitForFile(t, filepath.Join(dir, "started"))
	marker := filepath.Join(dir, "ran")
	p := start(t, dir, "run", "-v", "--store", sqliteURL(dir), "--key", "w", "--wait", "60s", "--", "touch", marker)
	waitForOutput(t, p.stderr, `"w" is held by`)
	p.cmd.Process.Signal(syscall.SIGINT)
	if r := p.wait(t); r.code != 128+2 || fileExists(marker) {
		t.Errorf("SIGINT while waiting: code %d, ran %v; want 130 and no run", r.code, fileExists(marker))
	}
	os.WriteFile(filepath.Join(dir, "release"), nil, 0o600)
	holder.wait(t)
}

func signalName(s syscall.Signal) string {
	return map[syscall.Signal]string{syscall.SIGTERM: "TERM", syscall.SIGINT: "INT", syscall.SIGHUP: "HUP", syscall.SIGQUIT: "QUIT"}[s]
}

// closedPort returns a loopback port that nothing listens on.
func closedPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	return port
}

func TestBadInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	port := closedPort(t)
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"unknown command", []string{"frobnicate"}, 2, `unknown command "frobnicate"`},
		{"unknown flag", []string{"run", "--frob", "--", "true"}, 2, "flag provided but not defined: -frob"},
		{"bad duration", []string{"run", "--ttl", "soon", "--", "true"}, 2, `invalid value "soon" for flag -ttl`},
		{"ttl not whole ms", []string{"run", "--ttl", "1500us", "--", "true"}, 2, "invalid ttl"},
		{"missing command", []string{"run", "--key", "k"}, 2, "no command"},
		{"key too long", []string{"run", "--key", strings.Repeat("k", 501), "--", "true"}, 2, "invalid key"},
		{"empty key", []string{"run", "--key", "", "--", "true"}, 2, `--key "": the key is empty`},
		{"empty key with =", []string{"run", "--key=", "--", "true"}, 2, `--key "": the key is empty`},
		{"bad status format", []string{"status", "--format", "xml"}, 2, `status --format "xml": want table or json`},
		{"version argument", []string{"version", "extra"}, 2, "takes no arguments"},
		{"bad URL", []string{"run", "--store", "nonsense", "--", "true"}, 2, "is not a URL"},
		{"unknown scheme", []string{"status", "--store", "ftp://x/y"}, 2, "unsupported store"},
		{"bad redis URL", []string{"run", "--store", "redis://:secret@127.0.0.1:6379/zero", "--", "true"}, 2, "invalid database number"},
		{"unreachable redis", []string{"run", "--store", fmt.Sprintf("redis://:secret@127.0.0.1:%d/0", port), "--", "true"}, 125, "connection refused"},
		{"unreachable redis status", []string{"status", "--store", fmt.Sprintf("rediss://:secret@127.0.0.1:%d/0", port)}, 1, "connection refused"},
		{"bad postgres URL", []string{"status", "--store", "postgres://u:secret@h:port/db"}, 2, "cannot parse"},
		{"bad mysql URL", []string{"status", "--store", "mysql://u:secret@h:3306"}, 2, "names no database"},
		{"unreachable postgres", []string{"run", "--store", fmt.Sprintf("postgres://postgres:secret@127.0.0.1:%d/test?sslmode=disable", port), "--", "true"}, 125, "connection refused"},
		{"unreachable postgres status", []string{"status", "--store", fmt.Sprintf("postgres://postgres@127.0.0.1:%d/test?sslmode=disable", port)}, 1, "connection refused"},
		{"unreachable mysql", []string{"run", "--store", fmt.Sprintf("mysql://root:secret@127.0.0.1:%d/test", port), "--", "true"}, 125, "connection refused"},
		{"command not found", []string{"run", "--store", sqliteURL(dir), "--", "no-such-command-here"}, 127, "not found"},
		{"command not executable", []string{"run", "--store", sqliteURL(dir), "--", dir}, 126, "is a directory"},
		{"status argument", []string{"status", "extra"}, 2, "takes no arguments"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := lh(t, dir, tc.args...)
			if r.code != tc.code {
				t.Errorf("code %d, want %d; stderr:\n%s", r.code, tc.code, r.stderr)
			}
			checkOneLineError(t, r, tc.want)
			if strings.Contains(r.stderr, "secret") {
				t.Errorf("stderr shows the password: %s", r.stderr)
			}
		})
	}
}

// TestStatus lists a lock held by a run: its key, its holder (host:pid of
// the leasehold process), its token and the time it has left.
func TestStatus(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	store := sqliteURL(dir)
	if r := lh(t, dir, "status", "--store", store); r.code != 0 || !strings.Contains(r.stdout, "no live locks") {
		t.Errorf("status of an empty store: code %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	holder := start(t, dir, append([]string{"run", "--store", store, "--key", "jobs/reconcile", "--ttl", "20s", "--"}, holdScript(dir)...)...)
	waitForFile(t, filepath.Join(dir, "started"))

	r := lh(t, dir, "status", "--store", store, "--prefix", "jobs/")
	if r.code != 0 {
		t.Fatalf("status: code %d, stderr:\n%s", r.code, r.stderr)
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) != 2 || strings.Join(strings.Fields(lines[0]), " ") != "KEY HOLDER TOKEN EXPIRES IN" {
		t.Fatalf("status output:\n%s", r.stdout)
	}
	host, _ := os.Hostname()
	fields := strings.Fields(lines[1])
	wantHolder := host + ":" + strconv.Itoa(holder.cmd.Process.Pid)
	if len(fields) != 4 || fields[0] != "jobs/reconcile" || fields[1] != wantHolder || fields[2] != "1" {
		t.Fatalf("status row %q, want jobs/reconcile %s 1 <expiry>", lines[1], wantHolder)
	}
	if d, err := time.ParseDuration(fields[3]); err != nil || d <= 0 || d > 20*time.Second {
		t.Errorf("expires in %q, want a duration in (0, 20s]", fields[3])
	}

	if r := lh(t, dir, "status", "--store", store, "--prefix", "other/"); r.code != 0 || !strings.Contains(r.stdout, `no live locks with prefix "other/"`) {
		t.Errorf("status --prefix other/: code %d, stdout %q", r.code, r.stdout)
	}

	// The same, for a script.
	r = lh(t, dir, "status", "--store", store, "--prefix", "jobs/", "--format", "json")
	var listed []struct {
		Key, Holder, Owner string
		Token              int64
		ExpiresInMS        int64 `json:"expires_in_ms"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &listed); r.code != 0 || err != nil || len(listed) != 1 {
		t.Fatalf("status --format json: code %d, %v, stdout:\n%s", r.code, err, r.stdout)
	}
	if l := listed[0]; l.Key != "jobs/reconcile" || l.Holder != wantHolder || !strings.HasPrefix(l.Owner, wantHolder+"/") || l.Token != 1 || l.ExpiresInMS <= 0 || l.ExpiresInMS > 20_000 {
		t.Errorf("status --format json: %+v, want jobs/reconcile held by %s with token 1 for (0, 20000] ms", l, wantHolder)
	}
	if r := lh(t, dir, "status", "--store", store, "--prefix", "other/", "--format", "json"); r.code != 0 || r.stdout != "[]\n" {
		t.Errorf("status --format json with no lock: code %d, stdout %q, want []", r.code, r.stdout)
	}
	os.WriteFile(filepath.Join(dir, "release"), nil, 0o600)
	holder.wait(t)
	if r := lh(t, dir, "status", "--store", store); r.code != 0 || !strings.Contains(r.stdout, "no live locks") {
		t.Errorf("status after the release: code %d, stdout %q", r.code, r.stdout)
	}
}

// TestDefaultStore: without --store, run uses $LEASEHOLD_STORE, else the
// per-user SQLite file under $XDG_STATE_HOME, creating its directory.
func TestDefaultStore(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if r := lh(t, dir, "run", "--", "true"); r.code != 0 {
		t.Fatalf("run: code %d, stderr:\n%s", r.code, r.stderr)
	}
	if !fileExists(filepath.Join(dir, "state", "leasehold", "locks.db")) {
		t.Error("no locks.db under $XDG_STATE_HOME/leasehold")
	}

	other := filepath.Join(dir, "from-env.db")
	cmd := exec.Command(bin, "run", "--", "true")
	cmd.Env = append(os.Environ(), "LEASEHOLD_STORE=sqlite://"+other, "XDG_STATE_HOME="+filepath.Join(dir, "state"), "GORACE=atexit_sleep_ms=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("run with LEASEHOLD_STORE: %v\n%s", err, out)
	}
	if !fileExists(other) {
		t.Error("LEASEHOLD_STORE was not used")
	}
}

// serverRun checks run and status against a database server.
func serverRun(t *testing.T, store string) {
	dir := t.TempDir()
	key := fmt.Sprintf("cli-test/%d-%d", os.Getpid(), time.Now().UnixNano())
	holder := start(t, dir, append([]string{"run", "--store", store, "--key", key, "--ttl", "10s", "--"}, holdScript(dir)...)...)
	waitForFile(t, filepath.Join(dir, "started"))
	if r := lh(t, dir, "run", "--store", store, "--key", key, "--", "true"); r.code != 75 {
		t.Errorf("run on the held key: code %d, want 75; stderr:\n%s", r.code, r.stderr)
	}
	r := lh(t, dir, "status", "--store", store, "--prefix", key)
	if r.code != 0 || !strings.Contains(r.stdout, key) {
		t.Errorf("status: code %d, stdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	os.WriteFile(filepath.Join(dir, "release"), nil, 0o600)
	if r := holder.wait(t); r.code != 0 {
		t.Fatalf("holder: code %d, stderr:\n%s", r.code, r.stderr)
	}
	r = lh(t, dir, "run", "--store", store, "--key", key, "--", "sh", "-c", `echo "$LEASEHOLD_FENCING_TOKEN"`)
	if token, err := strconv.ParseInt(strings.TrimSpace(r.stdout), 10, 64); r.code != 0 || err != nil || token <= 0 {
		t.Errorf("run after the release: code %d, token %q, stderr:\n%s", r.code, r.stdout, r.stderr)
	}
}

func TestRunPostgres(t *testing.T) {
	t.Parallel()
	store := os.Getenv("LEASEHOLD_TEST_POSTGRES")
	if store == "" {
		t.Skip("LEASEHOLD_TEST_POSTGRES is not set")
	}
	serverRun(t, store)
}

func TestRunMySQL(t *testing.T) {
	t.Parallel()
	dsn := os.Getenv("LEASEHOLD_TEST_MYSQL")
	if dsn == "" {
		t.Skip("LEASEHOLD_TEST_MYSQL is not set")
	}
	store, err := mysqlURL(dsn)
	if err != nil {
		t.Fatal(err)
	}
	serverRun(t, store)
}

// redisStore returns the store URL of the Redis server or cluster at
// redisURL (rueidis.ParseURL's form) with a key prefix of the test's own,
// and deletes the test's keys when it ends.
func redisStore(t *testing.T, redisURL string) string {
	t.Helper()
	prefix := fmt.Sprintf("lh_cmd_%d_%d:", os.Getpid(), time.Now().UnixNano())
	u, err := url.Parse(redisURL)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("key_prefix", prefix)
	u.RawQuery = q.Encode()
	t.Cleanup(func() {
		opt, err := rueidis.ParseURL(redisURL)
		if err != nil {
			t.Fatal(err)
		}
		c, err := rueidis.NewClient(opt)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		ctx := context.Background()
		for addr, node := range c.Nodes() {
			for cursor := uint64(0); ; {
				e, err := node.Do(ctx, node.B().Scan().Cursor(cursor).Match(prefix+"*").Build()).AsScanEntry()
				if err != nil {
					t.Fatalf("SCAN on %s: %v", addr, err)
				}
				for _, k := range e.Elements {
					c.Do(ctx, c.B().Del().Key(k).Build())
				}
				if cursor = e.Cursor; cursor == 0 {
					break
				}
			}
		}
	})
	return u.String()
}

func TestRunRedis(t *testing.T) {
	t.Parallel()
	redisURL := os.Getenv("LEASEHOLD_TEST_REDIS")
	if redisURL == "" {
		t.Skip("LEASEHOLD_TEST_REDIS is not set")
	}
	serverRun(t, redisStore(t, redisURL))
	bad := strings.Replace(redisStore(t, redisURL), "key_prefix=", "key_prefix=%7B", 1)
	if r := lh(t, t.TempDir(), "status", "--store", bad); r.code != 2 || !strings.Contains(r.stderr, "brace") {
		t.Errorf("status with a key prefix that holds a brace: code %d, stderr:\n%s", r.code, r.stderr)
	}
}

// TestRunRedisCluster: the Cluster URL form, redis://host:port?addr=...
func TestRunRedisCluster(t *testing.T) {
	t.Parallel()
	seeds := os.Getenv("LEASEHOLD_TEST_REDIS_CLUSTER")
	if seeds == "" {
		t.Skip("LEASEHOLD_TEST_REDIS_CLUSTER is not set")
	}
	clusterURL := seeds
	if !strings.Contains(seeds, "://") {
		addrs := strings.Split(seeds, ",")
		clusterURL = (&url.URL{Scheme: "redis", Host: addrs[0], RawQuery: url.Values{"addr": addrs[1:]}.Encode()}).String()
	}
	serverRun(t, redisStore(t, clusterURL))
}

// TestRunRedisRestart: leasehold run's tokens keep growing after a Redis
// server without persistence restarts and forgets every key. The server is
// a redis-server of the test's own (the shared one is never restarted).
func TestRunRedisRestart(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("redis-server"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no redis-server binary: %v", err)
		}
		t.Skipf("no redis-server binary: %v", err)
	}
	dir := t.TempDir()
	port := closedPort(t)
	var srv *exec.Cmd
	startRedis := func() {
		srv = exec.Command("redis-server", "--bind", "127.0.0.1", "--port", strconv.Itoa(port), "--dir", dir, "--save", "", "--appendonly", "no")
		if err := srv.Start(); err != nil {
			t.Fatal(err)
		}
		for i := 0; ; i++ {
			if c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
				c.Close()
				return
			}
			if i == 500 {
				t.Fatal("redis-server does not listen")
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	stopRedis := func() {
		srv.Process.Kill()
		srv.Wait()
	}
	startRedis()
	t.Cleanup(stopRedis)
	store := fmt.Sprintf("redis://127.0.0.1:%d/0", port)
	token := func() int64 {
		t.Helper()
		r := lh(t, dir, "run", "--store", store, "--key", "nightly", "--", "sh", "-c", `echo "$LEASEHOLD_FENCING_TOKEN"`)
		n, err := strconv.ParseInt(strings.TrimSpace(r.stdout), 10, 64)
		if r.code != 0 || err != nil {
			t.Fatalf("run: code %d, stdout %q, stderr:\n%s", r.code, r.stdout, r.stderr)
		}
		return n
	}
	before := token()
	stopRedis()
	startRedis()
	if after := token(); after <= before {
		t.Fatalf("token %d after the restart, %d before: tokens must keep growing", after, before)
	}
}

// mysqlURL turns a go-sql-driver DSN (as LEASEHOLD_TEST_MYSQL gives it)
// into the mysql:// URL leasehold takes.
func mysqlURL(dsn string) (string, error) {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return "", err
	}
	if cfg.Net != "tcp" {
		return "", errors.New("LEASEHOLD_TEST_MYSQL: want a tcp address")
	}
	u := url.URL{Scheme: "mysql", Host: cfg.Addr, Path: "/" + cfg.DBName}
	if cfg.Passwd != "" {
		u.User = url.UserPassword(cfg.User, cfg.Passwd)
	} else {
		u.User = url.User(cfg.User)
	}
	return u.String(), nil
}
