// Package gocmd finds the go command for the tests that run it (to build a
// binary, or to build a module as a user would), so that they run the Go
// that runs the tests.
package gocmd

import (
	"os"
	"path/filepath"
)

// Path returns the go command of the toolchain that runs the tests:
// $GOROOT/bin/go (go test sets GOROOT for the test binary), else "go"
// from PATH.
func Path() string {
	if root := os.Getenv("GOROOT"); root != "" {
		p := filepath.Join(root, "bin", "go")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return "go"
}
