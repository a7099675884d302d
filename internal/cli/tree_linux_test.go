package cli

import (
	"os"
	"os/exec"
	"slices"
	"testing"
)

// TestDescendants: a child of this process is found, and the process to
// skip (and its children) is not.
func TestDescendants(t *testing.T) {
	keep := exec.Command("sleep", "30")
	skip := exec.Command("sh", "-c", "sleep 30 & wait")
	for _, c := range []*exec.Cmd{keep, skip} {
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Process.Kill(); c.Wait() })
	}
	got := descendants(skip.Process.Pid, keep.Process.Pid)
	if !slices.Contains(got, keep.Process.Pid) || slices.Contains(got, skip.Process.Pid) {
		t.Errorf("descendants = %v; want %d and not %d (self %d)", got, keep.Process.Pid, skip.Process.Pid, os.Getpid())
	}
	if ppid, state, ok := procStat(os.Getpid()); !ok || ppid != os.Getppid() || state != 'R' && state != 'S' {
		t.Errorf("procStat(self) = %d, %c, %v", ppid, state, ok)
	}
}
