// Package cli is the leasehold command: demo, run, status and version. It lives
// apart from package main so that its logic can be tested in process.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

// Exit statuses of the leasehold command. See docs/cli.md.
const (
	// ExitOK: success.
	ExitOK = 0
	// ExitError: status or demo failed (the store could not be reached, ...).
	ExitError = 1
	// ExitUsage: a bad flag, a bad store URL, a missing command.
	ExitUsage = 2
	// ExitNotAcquired: run did not get the lease (another holder had it, for
	// the whole --wait); the command did not run. EX_TEMPFAIL, as flock -E
	// is often set to.
	ExitNotAcquired = 75
	// ExitLost: run lost the lease while the command ran; the command was
	// stopped (SIGTERM, then SIGKILL after --grace) and may not have been
	// alone for a while.
	ExitLost = 76
	// ExitRunFailed: run itself failed (store unreachable, ...), as with
	// timeout(1) and env(1), so that it is not mistaken for the command's
	// own status.
	ExitRunFailed = 125
	// ExitCannotExecute: the command was found but could not be started.
	ExitCannotExecute = 126
	// ExitNotFound: the command was not found.
	ExitNotFound = 127
)

const usage = `leasehold: distributed locks (leases) with fencing tokens.

Usage:
  leasehold demo [--debug]                    three instances share a job on one SQLite file
  leasehold run [flags] -- command [args...]  run a command while holding a lease
  leasehold status [flags]                    list the live locks (--format json for scripts)
  leasehold version                           the command's version
  leasehold help [command]                    show this, or a command's flags

Stores (--store URL, else $LEASEHOLD_STORE, else the per-user SQLite file
$XDG_STATE_HOME/leasehold/locks.db, by default ~/.local/state/leasehold/locks.db):
  sqlite:///path/to/locks.db
  postgres://user:pass@host:5432/db?sslmode=disable
  mysql://user:pass@host:3306/db
  redis://user:pass@host:6379/0 (rediss:// for TLS; a Cluster as
    redis://host1:port?addr=host2:port&addr=host3:port)

Exit status: 0 ok, 1 error, 2 usage error; run has its own (leasehold help run).

Documentation: the page "The leasehold command" (and "Tutorial", "Jobs") of
the leasehold documentation, https://github.com/leasehold/leasehold; the
library's API: go doc github.com/leasehold/leasehold/core (in a module that
requires it), or https://pkg.go.dev/github.com/leasehold/leasehold/core.
`

const runUsage = `Usage: leasehold run [flags] -- command [args...]

Runs command while holding the lease on --key, renewed every ttl/3, and
releases it when the command exits. The command gets LEASEHOLD_KEY and
LEASEHOLD_FENCING_TOKEN in its environment and runs in its own process group.
A second process renews the lease; leasehold stops the command and every
process it started (SIGTERM, then SIGKILL after --grace) before the lease
can expire, even if that process dies, freezes or loses the store, and
when the command exits, whatever it left running. SIGINT, SIGTERM, SIGHUP and SIGQUIT sent to leasehold are forwarded
to the command's group. When the lease is held elsewhere, run exits 75 at
once (silently, unless -v), or waits up to --wait for it.

Flags:
  --store URL    the store (default $LEASEHOLD_STORE, else the per-user SQLite file)
  --key K        the lock key, not empty (default: the command's file name,
                 "reconcile" for /usr/local/bin/reconcile)
  --ttl D        lease ttl: how long a crashed leasehold blocks the key (default 30s)
  --wait D       wait up to D for a held lease (default 0: try once)
  --grace D      time from SIGTERM to SIGKILL (default 10s, or less: at most
                 ttl/3 - 1.5 x the safety margin, 7.75s for a 30s ttl)
  -v             say what happens on stderr (acquired, not acquired, released)

Exit status:
  N    the command's own status (128+S if signal S killed it)
  75   the lease was held by someone else: the command did not run
  76   the lease was lost (or its renewal could not be trusted) while the
       command ran: the command and what it started were stopped
  2    usage error (bad flag, bad store URL, no command)
  125  leasehold failed (the store could not be reached, ...)
  126  the command could not be started
  127  the command was not found
`

const statusUsage = `Usage: leasehold status [flags]

Lists the live locks: key, holder (instance name, by default host:pid),
fencing token, and the time left before the lock expires.

Flags:
  --store URL    the store (default $LEASEHOLD_STORE, else the per-user SQLite file)
  --prefix P     only the keys that start with P
  --format F     table (default), or json: an array of objects with key, holder,
                 owner, token and expires_in_ms, [] when no lock is live
`

const demoUsage = `Usage: leasehold demo [--debug]

Three instances of a service, in this process, share a job on one SQLite
file in a temporary directory: one runs it, the others skip; the owner
freezes and another takes over; the frozen one's late write is refused by
its fencing token; a clean shutdown hands the job over at once. Takes about
ten seconds; the file is removed at the end.

Flags:
  --debug        also show the library's debug lines (every acquisition,
                 release and skipped tick)
`

const versionUsage = `Usage: leasehold version

Prints the version of the leasehold module the command was built from: a
release's tag when installed with go install …@version, "(devel)" or a
pseudo-version when built from a clone, and the Go version that built it.
`

// Env is what a command sees of the process: its output streams.
type Env struct {
	Stdout io.Writer
	Stderr io.Writer
}

// Main runs the leasehold command with args (without the program name) and
// returns its exit status.
func Main(args []string, stdout, stderr io.Writer) int {
	env := Env{Stdout: stdout, Stderr: stderr}
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return ExitUsage
	}
	switch args[0] {
	case "help", "-h", "-help", "--help":
		if len(args) > 1 {
			if u, ok := commandUsage(args[1]); ok {
				fmt.Fprint(stdout, u)
				return ExitOK
			}
			return env.usageErr(fmt.Errorf("unknown command %q", args[1]))
		}
		fmt.Fprint(stdout, usage)
		return ExitOK
	case "demo":
		return env.demo(args[1:])
	case "run":
		return env.run(args[1:])
	case runnerCommand:
		return env.runner(args[1:])
	case "status":
		return env.status(args[1:])
	case "version", "--version":
		return env.version(args[1:])
	}
	if strings.HasPrefix(args[0], "-") {
		return env.usageErr(fmt.Errorf("flag %s before a command", args[0]))
	}
	return env.usageErr(fmt.Errorf("unknown command %q", args[0]))
}

func commandUsage(name string) (string, bool) {
	switch name {
	case "run":
		return runUsage, true
	case "status":
		return statusUsage, true
	case "demo":
		return demoUsage, true
	case "version":
		return versionUsage, true
	}
	return "", false
}

// usageErr reports a usage error on one line and returns ExitUsage.
func (e Env) usageErr(err error) int {
	fmt.Fprintf(e.Stderr, "leasehold: %s (see leasehold help)\n", oneLine(err.Error()))
	return ExitUsage
}

// fail reports err on one line and returns the status it calls for: a
// usage error gets ExitUsage, anything else code.
func (e Env) fail(err error, code int) int {
	var ue *usageError
	if errors.As(err, &ue) {
		return e.usageErr(err)
	}
	fmt.Fprintf(e.Stderr, "leasehold: %s\n", oneLine(err.Error()))
	return code
}

// newFlagSet returns a flag set that reports nothing itself: parse reports.
func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// parse parses a command's flags. done is true when the command must
// return code at once: -h (usage on stdout) or a bad flag (one line).
func (e Env) parse(fs *flag.FlagSet, args []string) (code int, done bool) {
	err := fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		u, _ := commandUsage(fs.Name())
		fmt.Fprint(e.Stdout, u)
		return ExitOK, true
	}
	if err != nil {
		fmt.Fprintf(e.Stderr, "leasehold %s: %s (see leasehold help %s)\n", fs.Name(), oneLine(err.Error()), fs.Name())
		return ExitUsage, true
	}
	return 0, false
}

// oneLine folds a message onto one line.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// interruptible returns a context that ends on SIGINT or SIGTERM.
func interruptible() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}
