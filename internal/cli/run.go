package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
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
	store   string
	key     string
	keySet  bool // --key was given, possibly empty
	ttl     time.Duration
	wait    time.Duration
	grace   time.Duration
	verbose bool
	argv    []string
}

func (e Env) run(args []string) int {
	fs := newFlagSet("run")
	var o runOptions
	fs.StringVar(&o.store, "store", "", "")
	fs.StringVar(&o.key, "key", "", "")
	fs.DurationVar(&o.ttl, "ttl", core.DefaultTTL, "")
	fs.DurationVar(&o.wait, "wait", 0, "")
	fs.DurationVar(&o.grace, "grace", 10*time.Second, "")
	fs.BoolVar(&o.verbose, "v", false, "")
	fs.BoolVar(&o.verbose, "verbose", false, "")
	if code, done := e.parse(fs, args); done {
		return code
	}
	o.argv = fs.Args()
	fs.Visit(func(f *flag.Flag) { o.keySet = o.keySet || f.Name == "key" })
	if err := o.check(); err != nil {
		fmt.Fprintf(e.Stderr, "leasehold run: %s (see leasehold help run)\n", oneLine(err.Error()))
		return ExitUsage
	}
	return e.runCommand(o)
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
	if o.grace < 0 {
		return fmt.Errorf("--grace: negative duration %v", o.grace)
	}
	return nil
}

// runCommand is leasehold run once its flags are checked: it makes sure the
// command can be run, takes the lease, runs the command under it and hands
// the lease back. It returns leasehold run's exit status.
func (e Env) runCommand(o runOptions) int {
	say := e.sayer(o.verbose)
	// Not found or not executable: say so before taking the lease.
	if _, err := exec.LookPath(o.argv[0]); err != nil {
		fmt.Fprintf(e.Stderr, "leasehold run: %s\n", oneLine(err.Error()))
		return execFailure(err)
	}

	// From here on the signals leasehold forwards are caught: before the
	// command starts they abort the wait; after, they go to the command.
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, forwardedSignals...)
	defer signal.Stop(sigs)

	l, code := e.takeLease(o, sigs, say)
	if l == nil {
		return code
	}
	defer l.close()
	say("acquired %q (token %d); running %s", o.key, l.lk.Token(), filepath.Base(o.argv[0]))

	cmd, code := e.startCommand(o, l.lk)
	if cmd == nil {
		l.lk.Release(context.Background())
		return code
	}
	lost, waitErr := e.supervise(cmd, l.lk, sigs, o, say)
	if lost == nil {
		lost = e.release(l.lk, o, say)
	}
	if lost != nil {
		return ExitLost
	}
	return exitStatus(cmd.ProcessState, waitErr)
}

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
func (l *lease) close() {
	ctx, cancel := context.WithTimeout(context.Background(), openTimeout)
	defer cancel()
	l.locks.Close(ctx)
	l.st.Close()
	l.end()
}

// takeLease opens the store and takes the lease (waiting up to --wait for
// it) while a signal may abort: then no command runs, and a lease taken
// meanwhile is handed back. On failure it has reported why, and returns the
// exit status with a nil lease.
func (e Env) takeLease(o runOptions, sigs <-chan os.Signal, say func(string, ...any)) (*lease, int) {
	// lockCtx is the lock's life: it must outlive the command, so it is not
	// tied to the signals; ending it ends the store set-up and the wait.
	lockCtx, endLock := context.WithCancel(context.Background())
	type taken struct {
		l    *lease
		code int
	}
	result := make(chan taken, 1)
	go func() {
		l, code := e.acquire(lockCtx, o, say)
		result <- taken{l, code}
	}()
	var t taken
	select {
	case t = <-result:
	case sig := <-sigs:
		endLock() // ends the wait; a lock taken meanwhile is released with it
		if t = <-result; t.l != nil {
			t.l.end = endLock
			t.l.lk.Release(context.Background())
			t.l.close()
		}
		say("%v before the command started; not running it", sig)
		return nil, 128 + signalNumber(sig)
	}
	if t.l == nil {
		endLock()
		return nil, t.code
	}
	t.l.end = endLock
	return t.l, ExitOK
}

// startCommand starts the command, with the lease's key and fencing token
// in its environment. On failure it has reported why, and returns the exit
// status with a nil command.
func (e Env) startCommand(o runOptions, lk *core.Lock) (*exec.Cmd, int) {
	cmd := exec.Command(o.argv[0], o.argv[1:]...)
	cmd.Env = append(withoutEnv(os.Environ(), EnvKey, EnvToken),
		EnvKey+"="+o.key, EnvToken+"="+strconv.FormatInt(lk.Token(), 10))
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.SysProcAttr = childAttr()
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(e.Stderr, "leasehold run: %s\n", oneLine(err.Error()))
		return nil, execFailure(err)
	}
	return cmd, ExitOK
}

// supervise waits for the command to exit, forwarding to it the signals
// leasehold catches. If the lease is lost meanwhile, it stops the command:
// SIGTERM, then SIGKILL after --grace. It returns the loss, if any, and the
// command's Wait error.
func (e Env) supervise(cmd *exec.Cmd, lk *core.Lock, sigs <-chan os.Signal, o runOptions, say func(string, ...any)) (*core.LockLostError, error) {
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	var (
		lost     *core.LockLostError
		lockDone = lk.Done()
		kill     <-chan time.Time
	)
	for {
		select {
		case err := <-waited:
			return lost, err
		case sig := <-sigs:
			say("forwarding %v to the command", sig)
			signalGroup(cmd.Process, sig)
		case <-lockDone:
			lockDone = nil
			if !errors.As(context.Cause(lk.Context()), &lost) {
				continue // released: cannot happen before the command exits
			}
			fmt.Fprintf(e.Stderr, "leasehold: lease on %q lost (%s): stopping the command (SIGTERM, SIGKILL after %v)\n",
				o.key, lost.Reason, o.grace)
			signalGroup(cmd.Process, sigTERM)
			t := time.NewTimer(o.grace)
			defer t.Stop()
			kill = t.C
		case <-kill:
			kill = nil
			fmt.Fprintf(e.Stderr, "leasehold: the command outlived --grace %v: SIGKILL\n", o.grace)
			signalGroup(cmd.Process, sigKILL)
		}
	}
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
func (e Env) acquire(ctx context.Context, o runOptions, say func(string, ...any)) (*lease, int) {
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
	locks, err := core.New(st, core.WithLogger(logger), core.WithDefaultTTL(o.ttl))
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
