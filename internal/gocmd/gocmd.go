// Package gocmd finds the go command for the tests that run it (to build a
// binary, or to build a module as a user would), so that they run the Go
// that runs the tests.
package gocmd

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
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

// BuildFlags returns the build flags of the running binary that the go
// commands it runs should share: -race when it was built with the race
// detector, so that what they build finds every dependency compiled in
// the cache of the test run instead of compiling it again without.
func BuildFlags() []string {
	info, ok := debug.ReadBuildInfo()
	if ok && slices.ContainsFunc(info.Settings, func(s debug.BuildSetting) bool { return s.Key == "-race" && s.Value == "true" }) {
		return []string{"-race"}
	}
	return nil
}
