package cli

import "syscall"

// setParentDeathSignal makes Linux send the command SIGTERM if leasehold
// dies (kill -9): its lease then expires after ttl, and the command must not
// go on without it.
func setParentDeathSignal(attr *syscall.SysProcAttr) { attr.Pdeathsig = syscall.SIGTERM }
