package cli

import (
	"context"
	"errors"
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
	if o.key == "" {
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

// runCommand is leasehold run once its flags are checked.
func (e Env) runCommand(o runOptions) int {
	say := func(format string, args ...any) {
		if o.verbose {
			fmt.Fprintf(e.Stderr, "leasehold: "+format+"\n", args...)
		}
	}
	// Not found or not executable: say so before taking the lease.
	if _, err := exec.LookPath(o.argv[0]); err != nil {
		code := ExitCannotExecute
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
			code = ExitNotFound
		}
		fmt.Fprintf(e.Stderr, "leasehold run: %s\n", oneLine(err.Error()))
		return code
	}
	cmd := exec.Command(o.argv[0], o.argv[1:]...)

	// From here on the signals leasehold forwards are caught: before the
	// command starts they abort the wait; after, they go to the command.
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, forwardedSignals...)
	defer signal.Stop(sigs)

	// lockCtx is the lock's life: it must outlive the command, so it is not
	// tied to the signals; abort ends the store set-up and the wait.
	lockCtx, endLock := context.WithCancel(context.Background())
	defer endLock()
	type acquired struct {
		st    *store
		locks *core.Locks
		lk    *core.Lock
		code  int
	}
	result := make(chan acquired, 1)
	go func() {
		st, locks, lk, code := e.acquire(lockCtx, o, say)
		result <- acquired{st, locks, lk, code}
	}()
	var a acquired
	select {
	case a = <-result:
	case sig := <-sigs:
		endLock() // ends the wait; a lock taken meanwhile is released with it
		a = <-result
		if a.lk != nil {
			a.lk.Release(context.Background())
			a.locks.Close(context.Background())
			a.st.Close()
		}
		say("%v before the command started; not running it", sig)
		return 128 + signalNumber(sig)
	}
	if a.lk == nil {
		return a.code
	}
	defer a.st.Close()
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), openTimeout)
		defer cancel()
		a.locks.Close(ctx)
	}()
	lk := a.lk
	say("acquired %q (token %d); running %s", o.key, lk.Token(), filepath.Base(o.argv[0]))

	cmd.Env = append(withoutEnv(os.Environ(), EnvKey, EnvToken),
		EnvKey+"="+o.key, EnvToken+"="+strconv.FormatInt(lk.Token(), 10))
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.SysProcAttr = childAttr()
	if err := cmd.Start(); err != nil {
		lk.Release(context.Background())
		fmt.Fprintf(e.Stderr, "leasehold run: %s\n", oneLine(err.Error()))
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
			return ExitNotFound
		}
		return ExitCannotExecute
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()

	var (
		lost     *core.LockLostError
		lockDone = lk.Done()
		kill     <-chan time.Time
		waitErr  error
	)
loop:
	for {
		select {
		case waitErr = <-waited:
			break loop
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

	// Release: the lock may turn out to have expired in the store unnoticed.
	ctx, cancel := context.WithTimeout(context.Background(), openTimeout)
	relErr := lk.Release(ctx)
	cancel()
	if lost == nil && errors.As(relErr, &lost) {
		fmt.Fprintf(e.Stderr, "leasehold: lease on %q had expired in the store when the command exited: it may not have run alone\n", o.key)
	} else if relErr != nil && lost == nil {
		fmt.Fprintf(e.Stderr, "leasehold: release %q: %s (it expires after its ttl)\n", o.key, oneLine(relErr.Error()))
	} else if lost == nil {
		say("released %q", o.key)
	}
	if lost != nil {
		return ExitLost
	}
	return exitStatus(cmd.ProcessState, waitErr)
}

// acquire opens the store and takes the lease. On failure it has reported
// the error and returns the exit status, with nil lock.
func (e Env) acquire(ctx context.Context, o runOptions, say func(string, ...any)) (*store, *core.Locks, *core.Lock, int) {
	raw, err := storeURL(o.store)
	if err != nil {
		return nil, nil, nil, e.fail(err, ExitRunFailed)
	}
	st, err := openStore(ctx, raw)
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil, nil, ExitRunFailed
		}
		return nil, nil, nil, e.fail(err, ExitRunFailed)
	}
	level := slog.LevelWarn
	if o.verbose {
		level = slog.LevelDebug
	}
	logger := slog.New(slog.NewTextHandler(e.Stderr, &slog.HandlerOptions{Level: level}))
	locks, err := core.New(st, core.WithLogger(logger), core.WithDefaultTTL(o.ttl))
	if err != nil {
		st.Close()
		return nil, nil, nil, e.fail(err, ExitRunFailed)
	}
	lk, err := locks.Acquire(ctx, o.key)
	if errors.Is(err, core.ErrNotAcquired) && o.wait > 0 {
		say("%q is held%s: waiting up to %v", o.key, heldBy(st, o.key), o.wait)
		lk, err = locks.Acquire(ctx, o.key, core.WithWait(o.wait))
	}
	if err == nil {
		return st, locks, lk, 0
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
	return nil, nil, nil, code
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
