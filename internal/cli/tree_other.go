//go:build !linux

package cli

import "errors"

// adoptOrphans is Linux's: elsewhere a process that leaves the command's
// process group and loses its parent is out of leasehold's reach.
func adoptOrphans() error { return errors.New("no child subreaper on this system") }

// descendants finds no process outside the command's group: only Linux lets
// leasehold list them.
func descendants(int, ...int) []int { return nil }
