package cli

import (
	"fmt"
	"runtime/debug"
	"strings"
)

func (e Env) version(args []string) int {
	fs := newFlagSet("version")
	if code, done := e.parse(fs, args); done {
		return code
	}
	if fs.NArg() > 0 {
		return e.usageErr(fmt.Errorf("version takes no arguments, got %q", fs.Arg(0)))
	}
	fmt.Fprintln(e.Stdout, versionLine(debug.ReadBuildInfo()))
	return ExitOK
}

// versionLine describes the build: the module's version (a tag for
// go install …@v1.2.3; "(devel)", or a pseudo-version stamped from the
// clone's VCS, for a build from a clone), the Go version, and the
// revision the clone was at, when the build recorded it.
func versionLine(info *debug.BuildInfo, ok bool) string {
	if !ok {
		return "leasehold (unknown version: built without module information)"
	}
	v := info.Main.Version
	if v == "" {
		v = "(devel)"
	}
	line := fmt.Sprintf("leasehold %s, built with %s", v, info.GoVersion)
	var rev, modified string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	if rev != "" && !strings.Contains(v, rev[:min(12, len(rev))]) {
		line += ", from revision " + rev[:min(12, len(rev))]
		if modified == "true" {
			line += " with local changes"
		}
	}
	return line
}
