package cli

import "os"

// tree is the command of leasehold run and everything it starts: its
// process group and, on Linux, every other descendant of leasehold but the
// runner (processes that left the group and were reparented to leasehold,
// or still have a parent in the tree).
type tree struct {
	cmd    *os.Process
	runner int // the runner's pid: not part of the tree
	exited bool
}

// signal sends sig to every process of the tree.
func (t *tree) signal(sig os.Signal) {
	signalGroup(t.cmd, sig) // the group outlives its leader
	for _, pid := range descendants(t.runner, t.cmd.Pid) {
		if p, err := os.FindProcess(pid); err == nil {
			_ = p.Signal(sig)
		}
	}
}

// empty reports whether every process of the tree is gone (zombies count
// as gone: they run no more).
func (t *tree) empty() bool {
	if !t.exited {
		return false
	}
	return !groupAlive(t.cmd.Pid) && len(descendants(t.runner, t.cmd.Pid)) == 0
}
