//go:build !unix

package cli

import (
	"os"
	"syscall"
)

var forwardedSignals = []os.Signal{os.Interrupt}

var (
	sigTERM = os.Kill
	sigKILL = os.Kill
)

func childAttr() *syscall.SysProcAttr { return nil }

func signalGroup(p *os.Process, sig os.Signal) { _ = p.Signal(sig) }

func signaled(*os.ProcessState) (int, bool) { return 0, false }

func signalNumber(os.Signal) int { return 2 }

func groupAlive(int) bool { return false }

func killGroup(int) {}

func runnerAttr() *syscall.SysProcAttr { return nil }
