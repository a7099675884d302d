//go:build unix

package cli

import (
	"os"
	"syscall"
)

// forwardedSignals are the signals leasehold run forwards to its command.
var forwardedSignals = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT}

var (
	sigTERM os.Signal = syscall.SIGTERM
	sigKILL os.Signal = syscall.SIGKILL
)

// childAttr puts the command in its own process group, so that a signal
// (forwarded, or SIGTERM after a loss) reaches the processes it started
// too, and a terminal's Ctrl-C reaches it once, through leasehold.
func childAttr() *syscall.SysProcAttr {
	attr := &syscall.SysProcAttr{Setpgid: true}
	setParentDeathSignal(attr)
	return attr
}

// signalGroup sends sig to the process group the command leads.
func signalGroup(p *os.Process, sig os.Signal) {
	s, ok := sig.(syscall.Signal)
	if !ok {
		_ = p.Signal(sig)
		return
	}
	if err := syscall.Kill(-p.Pid, s); err != nil {
		_ = p.Signal(sig)
	}
}

func signaled(ps *os.ProcessState) (int, bool) {
	ws, ok := ps.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() {
		return 0, false
	}
	return int(ws.Signal()), true
}

func signalNumber(sig os.Signal) int {
	if s, ok := sig.(syscall.Signal); ok {
		return int(s)
	}
	return 1
}

// groupAlive reports whether process group pgid has a process left.
func groupAlive(pgid int) bool { return syscall.Kill(-pgid, 0) == nil }

// killGroup sends SIGKILL to process group pgid.
func killGroup(pgid int) { _ = syscall.Kill(-pgid, syscall.SIGKILL) }

// runnerAttr puts the runner in a process group of its own, so that a
// terminal's Ctrl-C reaches the supervisor only, which decides.
func runnerAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
