package etcdserver

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// memberPackage is the command StartProcess builds and runs.
const memberPackage = "github.com/leasehold/leasehold/internal/testserver/etcdserver/cmd/etcdmember"

// stopTimeout bounds a member process's stop after SIGTERM, before it is
// killed.
const stopTimeout = 10 * time.Second

// StartProcess starts a single member in a process of its own
// (cmd/etcdmember, configured as [Start] configures one, its data in a
// temporary directory of t), waits until it serves clients, and returns its
// client endpoint. The member is built without the race detector: the
// detector slows every request the server handles several times over, and
// under a loaded test run a member inside the test binary answered calls
// seconds late, which a real etcd, a server of its own, does not. When t
// ends the process is stopped by its PID; if the test binary dies first,
// the member sees its standard input end and stops too.
func StartProcess(t testing.TB) []string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "etcdmember")
	build := exec.Command(goCommand(), "build", "-o", bin, memberPackage)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("etcdserver: build %s: %v\n%s", memberPackage, err, out)
	}
	client, peer := freeURL(t), freeURL(t)
	cmd := exec.Command(bin, "-stdin", "-dir", t.TempDir(), "-client", client.Host, "-peer", peer.Host)
	// A process group of its own: a Ctrl-C on the test does not reach it
	// before the cleanup does.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatalf("etcdserver: %v", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatalf("etcdserver: %v", err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("etcdserver: start member process: %v", err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(stopTimeout):
			_ = cmd.Process.Kill()
			<-exited
		}
		_ = stdin.Close()
	})
	ready := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		ready <- strings.TrimSpace(line)
	}()
	select {
	case url := <-ready:
		if url == "" {
			t.Fatalf("etcdserver: the member process (PID %d) ended before it served clients", cmd.Process.Pid)
		}
		return []string{url}
	case <-time.After(startTimeout):
		t.Fatalf("etcdserver: the member process (PID %d) did not serve clients within %v", cmd.Process.Pid, startTimeout)
		return nil
	}
}

// goCommand returns the go command of the toolchain that runs the tests:
// $GOROOT/bin/go (go test sets GOROOT for the test binary), else "go" from
// PATH. It is internal/gocmd's Path, which this module cannot import
// without requiring the root module and all it depends on.
func goCommand() string {
	if root := os.Getenv("GOROOT"); root != "" {
		p := filepath.Join(root, "bin", "go")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return "go"
}
