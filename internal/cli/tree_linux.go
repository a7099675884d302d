package cli

import (
	"bytes"
	"os"
	"slices"
	"strconv"

	"golang.org/x/sys/unix"
)

// adoptOrphans makes this process a child subreaper: a process the command
// starts, whose parent then dies (a double fork, a daemon that calls
// setsid), is reparented to leasehold instead of init, so that leasehold
// can still find and stop it.
func adoptOrphans() error { return unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) }

// descendants returns the live processes below this one, except the
// process skip and its own descendants. It reaps, on the way, the zombies
// of orphans reparented to this process (but not those of keep, whose
// status a Wait call collects).
func descendants(skip int, keep ...int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	children := map[int][]int{}
	zombie := map[int]bool{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		ppid, state, ok := procStat(pid)
		if !ok {
			continue
		}
		children[ppid] = append(children[ppid], pid)
		zombie[pid] = state == 'Z' || state == 'X'
	}
	self := os.Getpid()
	var live []int
	queue := []int{self}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			if c == skip {
				continue
			}
			queue = append(queue, c)
			if !zombie[c] {
				live = append(live, c)
				continue
			}
			if p == self && !slices.Contains(keep, c) {
				var ws unix.WaitStatus
				_, _ = unix.Wait4(c, &ws, unix.WNOHANG, nil)
			}
		}
	}
	return live
}

// procStat reads a process's parent and state from /proc/PID/stat.
func procStat(pid int) (ppid int, state byte, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, false
	}
	// pid (comm) state ppid ...; comm may hold spaces and parentheses.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, false
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 2 || len(f[0]) != 1 {
		return 0, 0, false
	}
	ppid, err = strconv.Atoi(string(f[1]))
	return ppid, f[0][0], err == nil
}
