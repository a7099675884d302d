package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/gocmd"
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
	build := exec.Command(gocmd.Path(), append(append([]string{"build", "-o", shopd}, gocmd.BuildFlags()...), "./examples/shop/cmd/shopd")...)
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
					t.Errorf("instance %d: %v; its log:\n%s", i+1, err, in.output())
				}
			}
		})
	}
}

// instance is a shopd process, and the file it logs to.
type instance struct {
	cmd  *exec.Cmd
	log  string
	done chan error
}

func startShopd(t *testing.T, shopd, dsn string) *instance {
	in := &instance{cmd: exec.Command(shopd, "-addr", "127.0.0.1:0", "-reconcile-every", "1s"), done: make(chan error, 1)}
	in.cmd.Env = append(os.Environ(), "DATABASE_URL="+dsn, "ADMIN_TOKEN=s3cret")
	log, err := os.CreateTemp(t.TempDir(), "shopd-*.log")
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close() // the process has its own descriptor
	in.log = log.Name()
	in.cmd.Stdout, in.cmd.Stderr = log, log
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
	for !strings.Contains(in.output(), want) {
		select {
		case err := <-in.done:
			in.done <- err
			t.Fatalf("waiting for %s, the process exited (%v); its log:\n%s", what, err, in.output())
		case <-deadline:
			t.Fatalf("timed out waiting for %s; its log:\n%s", what, in.output())
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

// output returns what the process has logged so far.
func (in *instance) output() string {
	b, _ := os.ReadFile(in.log)
	return string(b)
}
