package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/leasehold/leasehold/core"
)

// runnerCommand is the hidden command that takes and renews the lease of
// leasehold run for its supervisor (see supervisor.go), which starts it as
// a process of its own: a runner that is killed or frozen cannot keep the
// supervisor from stopping the command in time.
const runnerCommand = "_runner"

// runner is the runner's main: it takes the lease, reports each confirmed
// renewal's deadline and the fencing token on stdout, and releases the
// lease when stdin says the command is done. Its flags are run's; the
// command's name (for messages) follows "--".
func (e Env) runner(args []string) int {
	o, code, ok := e.parseRun("run", args)
	if !ok {
		return code
	}
	say := e.sayer(o.verbose)
	out := &sender{w: os.Stdout}
	orders := receive(os.Stdin)

	// Until the lease is taken, SIGTERM or SIGINT (from the supervisor) end
	// the wait; afterwards they kill the runner, as kill -9 does, and the
	// supervisor stops the command.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	lockCtx, endLock := context.WithCancel(context.Background())
	defer endLock()
	taken := make(chan struct{})
	go func() {
		select {
		case <-sigs:
			endLock()
		case <-taken:
		}
	}()
	obs := &deadlineObserver{key: o.key, ttl: o.ttl, out: out}
	// The holder a status shows is leasehold run's own pid, the
	// supervisor's, the one an operator sees in ps above the command.
	host, _ := os.Hostname()
	l, code := e.acquire(lockCtx, o, say, core.WithObserver(obs),
		core.WithInstanceName(fmt.Sprintf("%s:%d", host, os.Getppid())))
	if lockCtx.Err() != nil {
		if l != nil {
			l.lk.Release(context.Background())
			l.close()
		}
		return ExitRunFailed
	}
	close(taken)
	signal.Reset(syscall.SIGTERM, syscall.SIGINT)
	if l == nil {
		return code
	}
	l.end = endLock
	say("acquired %q (token %d); running %s", o.key, l.lk.Token(), filepath.Base(o.argv[0]))
	out.send(msgToken, l.lk.Token())

	pgid := 0
	for {
		select {
		case m, open := <-orders:
			switch {
			case !open:
				// The supervisor died without saying the command was done:
				// the command may still run. Kill its group, and leave the
				// lease to expire after its ttl rather than release it.
				if pgid > 0 {
					killGroup(pgid)
				}
				fmt.Fprintf(e.Stderr, "leasehold: the supervisor of %q died: the command's process group is killed, and the lease is left to expire after its ttl\n", o.key)
				return ExitLost
			case m.verb == msgPgid:
				n, _ := m.int64Arg()
				pgid = int(n)
			case m.verb == msgDone && (l.lk.Context().Err() != nil || bootNanos() > obs.last.Load()):
				// Lost, or its deadline passed before the lock noticed.
				return e.lost(l, o, out, obs)
			case m.verb == msgDone:
				lost := e.release(l.lk, o, say)
				l.close()
				if lost != nil {
					return ExitLost
				}
				return ExitOK
			}
		case <-l.lk.Done():
			return e.lost(l, o, out, obs)
		}
	}
}

// lostCloseTimeout bounds the runner's goodbye to a store once the lease is
// lost, so that leasehold run does not hang on a store that stalled.
const lostCloseTimeout = time.Second

// lost reports the loss of the lease to the supervisor and on stderr, and
// returns the runner's exit status. A deadline that passed well before the
// runner noticed (more than the safety margin, which covers late timers)
// means the runner was frozen or starved meanwhile, and it says so.
func (e Env) lost(l *lease, o runOptions, out *sender, obs *deadlineObserver) int {
	lost := &core.LockLostError{Key: o.key, Reason: core.LostDeadline}
	errors.As(context.Cause(l.lk.Context()), &lost)
	out.send(msgLost, lost.Reason)
	late := time.Duration(bootNanos() - obs.last.Load())
	if lost.Reason == core.LostDeadline && late > core.SafetyMargin(o.ttl) {
		fmt.Fprintf(e.Stderr, "leasehold: lease on %q lost while leasehold was frozen or starved: its deadline passed %v ago without a confirmed renewal; the command was stopped before it\n", o.key, late.Round(time.Millisecond))
	} else {
		fmt.Fprintf(e.Stderr, "leasehold: lease on %q lost (%s): the command is stopped\n", o.key, lost.Reason)
	}
	// Nothing is left to release; a store that stalled gets a short while.
	l.closeWithin(lostCloseTimeout)
	return ExitLost
}

// deadlineObserver reports, for each acquisition or renewal of the key
// that the store confirms, the moment until which the lease is safe: the
// time read just before the call was sent, plus the ttl, minus the safety
// margin. The store counts the ttl from a later moment (when it runs the
// call), so the deadline is never later than the store's expiry.
type deadlineObserver struct {
	key  string
	ttl  time.Duration
	out  *sender
	last atomic.Int64 // the last deadline reported
}

func (d *deadlineObserver) Start(ctx context.Context, op core.Op) (context.Context, func(bool, error)) {
	if op.Key != d.key || (op.Type != core.OpAcquire && op.Type != core.OpRenew) {
		return ctx, func(bool, error) {}
	}
	sent := bootNanos()
	return ctx, func(ok bool, _ error) {
		if ok {
			deadline := sent + int64(d.ttl-core.SafetyMargin(d.ttl))
			d.last.Store(deadline)
			d.out.send(msgDeadline, deadline)
		}
	}
}
