package cli

import (
	"time"

	"golang.org/x/sys/unix"
)

// bootNanos reads CLOCK_BOOTTIME: one clock for every process of the host,
// which never jumps with the wall clock and goes on counting while the host
// is suspended (as the store's clock does). Both processes of leasehold run
// read the same clock, so a deadline one computes is one the other can keep.
func bootNanos() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		// Linux before 2.6.39: both processes fall back alike.
		return time.Now().UnixNano()
	}
	return ts.Nano()
}
