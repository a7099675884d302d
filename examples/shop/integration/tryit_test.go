package integration

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/testserver"
)

func TestMain(m *testing.M) { os.Exit(testserver.Main(m)) }

// root is the repository's root, the example's module.
const root = "../../.."

// TestTryItOnAFreshPostgres does what the tutorial's "Try it" says, on
// PostgreSQL: three instances of shopd started at once on a fresh
// database. Each must start (the tables and the locks' table are created
// once, whoever comes first), and shut down cleanly on SIGTERM. A few rounds,
// each on a database of its own, since the start-up race is a race.
func TestTryItOnAFreshPostgres(t *testing.T) {
	shopd := filepath.Join(t.TempDir(), "shopd")
	build := exec.Command("go", "build", "-o", shopd, "./examples/shop/cmd/shopd")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build shopd: %v\n%s", err, out)
	}
	for round := range 3 {
		t.Run(fmt.Sprint("round ", round+1), func(t *testing.T) {
			dsn := testserver.Postgres(t)
			instances := make([]*instance, 3)
			var wg sync.WaitGroup
			for i := range instances {
				wg.Go(func() { instances[i] = startShopd(t, shopd, dsn) })
			}
			wg.Wait()
			for i, in := range instances {
				in.waitFor(t, fmt.Sprintf("instance %d to start", i+1), `msg="shop started"`)
			}
			for _, in := range instances {
				in.cmd.Process.Signal(syscall.SIGTERM)
			}
			for i, in := range instances {
				if err := in.wait(t); err != nil {
					t.Errorf("instance %d: %v; its log:\n%s", i+1, err, in.out.String())
				}
			}
		})
	}
}

// instance is a shopd process and its log.
type instance struct {
	cmd  *exec.Cmd
	out  *syncBuffer
	done chan error
}

func startShopd(t *testing.T, shopd, dsn string) *instance {
	in := &instance{cmd: exec.Command(shopd, "-addr", "127.0.0.1:0", "-reconcile-every", "1s"), out: &syncBuffer{}, done: make(chan error, 1)}
	in.cmd.Env = append(os.Environ(), "DATABASE_URL="+dsn, "ADMIN_TOKEN=s3cret")
	in.cmd.Stdout, in.cmd.Stderr = in.out, in.out
	if err := in.cmd.Start(); err != nil {
		t.Errorf("start shopd: %v", err)
		close(in.done)
		return in
	}
	go func() { in.done <- in.cmd.Wait() }()
	t.Cleanup(func() { in.cmd.Process.Kill() })
	return in
}

// waitFor waits until the log shows want, and fails if the process exits first.
func (in *instance) waitFor(t *testing.T, what, want string) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for !strings.Contains(in.out.String(), want) {
		select {
		case err := <-in.done:
			in.done <- err
			t.Fatalf("waiting for %s, the process exited (%v); its log:\n%s", what, err, in.out.String())
		case <-deadline:
			t.Fatalf("timed out waiting for %s; its log:\n%s", what, in.out.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// wait returns the process's exit error, or an error if it takes longer
// than the shutdown's own deadline allows.
func (in *instance) wait(t *testing.T) error {
	select {
	case err := <-in.done:
		return err
	case <-time.After(30 * time.Second):
		return fmt.Errorf("still running 30s after SIGTERM")
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
