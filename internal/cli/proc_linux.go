package cli

import "syscall"

// setParentDeathSignal makes Linux SIGKILL the command if the supervisor
// dies (kill -9): nothing would stop it before its lease expires otherwise.
// The runner then kills the rest of its group, and leaves the lease to
// expire after its ttl.
func setParentDeathSignal(attr *syscall.SysProcAttr) { attr.Pdeathsig = syscall.SIGKILL }
