//go:build !linux

package cli

import "time"

// bootNanos reads the wall clock, the one clock every process of the host
// shares on systems without CLOCK_BOOTTIME in golang.org/x/sys. A step of
// the wall clock moves the supervisor's deadline with it.
func bootNanos() int64 { return time.Now().UnixNano() }
