package leasehold_test

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/gocmd"
)

// readmeProgram returns README's first ```go block, the guarded job: a
// whole program.
func readmeProgram(t *testing.T) string {
	t.Helper()
	for _, b := range goBlocks(t, "README.md") {
		if isWholeFile(b.text) && strings.Contains(b.text, "func main()") {
			return b.text
		}
	}
	t.Fatal("README.md shows no ```go block with a whole program")
	return ""
}

// instance is one running copy of README's program.
type instance struct {
	cmd   *exec.Cmd
	lines chan string // its log lines, closed at exit
}

func startInstance(t *testing.T, bin, dir string) *instance {
	t.Helper()
	cmd := exec.Command(bin)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "EXPORT_SCHEDULE=@every 1s")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	in := &instance{cmd: cmd, lines: make(chan string, 1000)}
	go func() {
		defer close(in.lines)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			in.lines <- sc.Text()
		}
		io.Copy(io.Discard, stderr)
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	return in
}

var exported = regexp.MustCompile(`exporting invoices, fencing token (\d+)`)

// await returns the next line of in that contains want, failing the test
// after timeout.
func (in *instance) await(t *testing.T, name, want string, timeout time.Duration) string {
	t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case l, ok := <-in.lines:
			if !ok {
				t.Fatalf("%s exited before logging %q", name, want)
			}
			t.Logf("%s: %s", name, l)
			if strings.Contains(l, want) {
				return l
			}
		case <-deadline:
			t.Fatalf("%s logged no %q within %v", name, want, timeout)
		}
	}
}

// TestReadmeGuardedJob runs README's guarded job as its reader does, in
// two terminals: two processes on one SQLite file, a tick a second. The
// job runs on the first only; on Ctrl-C (SIGINT) the first hands its lease
// back, and the second runs the job at its next ticks, long before the
// job's 30 s ttl would have freed it.
func TestReadmeGuardedJob(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs README's program")
	}
	mod := scratchWorkspace(t)
	if err := os.MkdirAll(filepath.Join(mod, "guarded"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(mod, "guarded", "main.go"), []byte(readmeProgram(t)), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "guarded")
	if out, err := goIn(mod, append(append([]string{"build"}, gocmd.BuildFlags()...), "-o", bin, "./guarded")...); err != nil {
		t.Fatalf("go build of README's program: %v\n%s", err, out)
	}

	dir := t.TempDir() // where both find locks.db
	a := startInstance(t, bin, dir)
	first := exported.FindStringSubmatch(a.await(t, "a", "exporting invoices", 60*time.Second))
	b := startInstance(t, bin, dir)
	b.await(t, "b", "running", 60*time.Second)
	// Two more runs on a, none on b: the job runs on one instance.
	a.await(t, "a", "exporting invoices", 30*time.Second)
	a.await(t, "a", "exporting invoices", 30*time.Second)
drain:
	for {
		select {
		case l := <-b.lines:
			t.Logf("b: %s", l)
			if exported.MatchString(l) {
				t.Fatalf("b ran the job while a owned it: %s", l)
			}
		default:
			break drain
		}
	}

	if err := a.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	a.await(t, "a", "stopped", 30*time.Second)
	if err := a.cmd.Wait(); err != nil {
		t.Errorf("a, stopped with Ctrl-C: %v", err)
	}
	stopped := time.Now()
	next := exported.FindStringSubmatch(b.await(t, "b", "exporting invoices", 25*time.Second))
	t.Logf("b took the job over %v after a stopped", time.Since(stopped).Round(time.Millisecond))
	before, _ := strconv.ParseInt(first[1], 10, 64)
	after, _ := strconv.ParseInt(next[1], 10, 64)
	if after <= before {
		t.Errorf("b's fencing token %d is not above a's %d", after, before)
	}
}
