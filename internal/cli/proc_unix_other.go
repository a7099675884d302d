//go:build unix && !linux

package cli

import "syscall"

func setParentDeathSignal(*syscall.SysProcAttr) {}
