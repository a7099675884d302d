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
	l, code := e.acquire(lockCtx, o, say, core.WithObserver(obs))
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
			case m.verb == msgDone && l.lk.Context().Err() != nil:
				return e.lost(l, o, out)
			case m.verb == msgDone && bootNanos() > obs.last.Load():
				// The deadline passed before the lock noticed: the runner
				// was frozen or starved, and the supervisor stopped the
				// command at the deadline.
				late := time.Duration(bootNanos() - obs.last.Load()).Round(time.Millisecond)
				fmt.Fprintf(e.Stderr, "leasehold: lease on %q lost while leasehold was frozen or starved: no renewal was confirmed before its deadline, %v ago; the command was stopped at the deadline\n", o.key, late)
				e.release(l.lk, o, func(string, ...any) {})
				l.close()
				return ExitLost
			case m.verb == msgDone:
				lost := e.release(l.lk, o, say)
				l.close()
				if lost != nil {
					return ExitLost
				}
				return ExitOK
			}
		case <-l.lk.Done():
			return e.lost(l, o, out)
		}
	}
}

// lost reports the loss of the lease to the supervisor and on stderr, and
// returns the runner's exit status.
func (e Env) lost(l *lease, o runOptions, out *sender) int {
	var lost *core.LockLostError
	if !errors.As(context.Cause(l.lk.Context()), &lost) {
		lost = &core.LockLostError{Key: o.key}
	}
	out.send(msgLost, lost.Reason)
	fmt.Fprintf(e.Stderr, "leasehold: lease on %q lost (%s): the command is stopped\n", o.key, lost.Reason)
	l.close()
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
