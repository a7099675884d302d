package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/leasehold/leasehold/core"
)

// Environment variables given to the command of leasehold run.
const (
	EnvKey   = "LEASEHOLD_KEY"
	EnvToken = "LEASEHOLD_FENCING_TOKEN"
)

type runOptions struct {
	store    string
	key      string
	keySet   bool // --key was given, possibly empty
	ttl      time.Duration
	wait     time.Duration
	grace    time.Duration
	graceSet bool // --grace was given
	verbose  bool
	argv     []string
}

func (e Env) run(args []string) int {
	o, code, ok := e.parseRun("run", args)
	if !ok {
		return code
	}
	return e.supervise(o)
}

// parseRun parses and checks the flags of run (and of the runner, which
// gets run's). ok is false when the command must return code at once.
func (e Env) parseRun(name string, args []string) (o runOptions, code int, ok bool) {
	fs := newFlagSet(name)
	fs.StringVar(&o.store, "store", "", "")
	fs.StringVar(&o.key, "key", "", "")
	fs.DurationVar(&o.ttl, "ttl", core.DefaultTTL, "")
	fs.DurationVar(&o.wait, "wait", 0, "")
	fs.DurationVar(&o.grace, "grace", 0, "")
	fs.BoolVar(&o.verbose, "v", false, "")
	fs.BoolVar(&o.verbose, "verbose", false, "")
	if code, done := e.parse(fs, args); done {
		return o, code, false
	}
	o.argv = fs.Args()
	fs.Visit(func(f *flag.Flag) {
		o.keySet = o.keySet || f.Name == "key"
		o.graceSet = o.graceSet || f.Name == "grace"
	})
	if err := o.check(); err != nil {
		fmt.Fprintf(e.Stderr, "leasehold run: %s (see leasehold help run)\n", oneLine(err.Error()))
		return o, ExitUsage, false
	}
	return o, ExitOK, true
}

func (o *runOptions) check() error {
	if len(o.argv) == 0 {
		return errors.New("no command: want leasehold run [flags] -- command [args...]")
	}
	switch {
	case o.key == "" && o.keySet:
		return errors.New(`--key "": the key is empty; give a key, or leave --key out to use the command's file name`)
	case o.key == "":
		o.key = filepath.Base(o.argv[0])
	}
	if err := core.ValidateKey(o.key); err != nil {
		return fmt.Errorf("--key: %w", err)
	}
	if err := core.ValidateTTL(o.ttl); err != nil {
		return fmt.Errorf("--ttl: %w", err)
	}
	if o.wait < 0 {
		return fmt.Errorf("--wait: negative duration %v", o.wait)
	}
	return o.checkGrace()
}

// checkGrace checks --grace against the ttl, or picks it: defaultGrace,
// or less if the ttl calls for less.
func (o *runOptions) checkGrace() error {
	limit := graceLimit(o.ttl)
	switch {
	case !o.graceSet:
		o.grace = min(defaultGrace, limit)
	case o.grace < 0:
		return fmt.Errorf("--grace: negative duration %v", o.grace)
	case o.grace > limit:
		return fmt.Errorf("--grace %v does not fit in a %v lease: the command gets SIGTERM at most ttl/3 - 1.5 × the safety margin (%v - 1.5 × %v = %v) before its lease's deadline, and SIGKILL at it; use --grace %v or less, or a longer --ttl",
			o.grace, o.ttl, o.ttl/3, core.SafetyMargin(o.ttl), limit, limit)
	}
	return nil
}

// defaultGrace is --grace when not given (less if the ttl calls for less).
const defaultGrace = 10 * time.Second

// sayer returns the function that tells, with --verbose, what leasehold run
// is doing.
func (e Env) sayer(verbose bool) func(format string, args ...any) {
	return func(format string, args ...any) {
		if verbose {
			fmt.Fprintf(e.Stderr, "leasehold: "+format+"\n", args...)
		}
	}
}

// execFailure is the exit status for a command that could not be run: not
// found, or found but not executable.
func execFailure(err error) int {
	if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
		return ExitNotFound
	}
	return ExitCannotExecute
}

// lease is what leasehold run holds while its command runs: the lock, the
// Locks instance and the store it was taken on, and the end of the context
// the lock lives in.
type lease struct {
	st    *store
	locks *core.Locks
	lk    *core.Lock
	end   context.CancelFunc
}

// close releases the lock if it is still held (within openTimeout) and
// closes what the lease was taken on.
func (l *lease) close() { l.closeWithin(openTimeout) }

// closeWithin is close, giving the store d to answer.
func (l *lease) closeWithin(d time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	l.locks.Close(ctx)
	l.st.Close()
	l.end()
}

// release hands the lease back once the command has exited. The store may
// answer that the lease had expired unnoticed: the command may then not have
// run alone, and release returns that loss.
func (e Env) release(lk *core.Lock, o runOptions, say func(string, ...any)) *core.LockLostError {
	ctx, cancel := context.WithTimeout(context.Background(), openTimeout)
	defer cancel()
	err := lk.Release(ctx)
	var lost *core.LockLostError
	switch {
	case errors.As(err, &lost):
		fmt.Fprintf(e.Stderr, "leasehold: lease on %q had expired in the store when the command exited: it may not have run alone\n", o.key)
	case err != nil:
		fmt.Fprintf(e.Stderr, "leasehold: release %q: %s (it expires after its ttl)\n", o.key, oneLine(err.Error()))
	default:
		say("released %q", o.key)
	}
	return lost
}

// acquire opens the store and takes the lease in ctx. On failure it has
// reported the error and returns the exit status, with a nil lease.
func (e Env) acquire(ctx context.Context, o runOptions, say func(string, ...any), opts ...core.Option) (*lease, int) {
	raw, err := storeURL(o.store)
	if err != nil {
		return nil, e.fail(err, ExitRunFailed)
	}
	st, err := openStore(ctx, raw)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ExitRunFailed
		}
		return nil, e.fail(err, ExitRunFailed)
	}
	level := slog.LevelWarn
	if o.verbose {
		level = slog.LevelDebug
	}
	logger := slog.New(slog.NewTextHandler(e.Stderr, &slog.HandlerOptions{Level: level}))
	locks, err := core.New(st, append([]core.Option{core.WithLogger(logger), core.WithDefaultTTL(o.ttl)}, opts...)...)
	if err != nil {
		st.Close()
		return nil, e.fail(err, ExitRunFailed)
	}
	lk, err := locks.Acquire(ctx, o.key)
	if errors.Is(err, core.ErrNotAcquired) && o.wait > 0 {
		say("%q is held%s: waiting up to %v", o.key, heldBy(st, o.key), o.wait)
		lk, err = locks.Acquire(ctx, o.key, core.WithWait(o.wait))
	}
	if err == nil {
		return &lease{st: st, locks: locks, lk: lk}, ExitOK
	}
	code := ExitRunFailed
	switch {
	case ctx.Err() != nil:
		// Interrupted: the caller reports it.
	case errors.Is(err, core.ErrNotAcquired):
		code = ExitNotAcquired
		if o.verbose {
			say("%q is held%s: not running %s", o.key, heldBy(st, o.key), filepath.Base(o.argv[0]))
		}
	default:
		e.fail(fmt.Errorf("store %s: %w", st.desc, err), ExitRunFailed)
	}
	locks.Close(context.Background())
	st.Close()
	return nil, code
}

// heldBy describes who holds key, if the store can tell, for messages.
func heldBy(st *store, key string) string {
	if st.lister == nil {
		return ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	infos, err := st.lister.List(ctx, key)
	if err != nil {
		return ""
	}
	for _, i := range infos {
		if i.Key == key {
			return fmt.Sprintf(" by %s (token %d, expires in %s)", holder(i.Owner), i.Token, expiresIn(i.ExpiresIn))
		}
	}
	return ""
}

// withoutEnv returns env without the variables named.
func withoutEnv(env []string, names ...string) []string {
	out := env[:0:0]
next:
	for _, kv := range env {
		for _, n := range names {
			if strings.HasPrefix(kv, n+"=") {
				continue next
			}
		}
		out = append(out, kv)
	}
	return out
}

// exitStatus is the command's exit status as a shell reports it: its code,
// or 128+N when signal N ended it.
func exitStatus(ps *os.ProcessState, err error) int {
	if ps == nil {
		if err != nil {
			return ExitRunFailed
		}
		return ExitOK
	}
	if n, ok := signaled(ps); ok {
		return 128 + n
	}
	return ps.ExitCode()
}
