package cli

import (
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"time"

	"github.com/leasehold/leasehold/core"
)

// supervise is leasehold run once its flags are checked. This process, the
// supervisor, holds no lease itself: it starts the runner (the same binary,
// runnerCommand), which takes and renews the lease and reports each
// confirmed renewal's deadline, then runs the command under that deadline.
// It stops the command's whole tree before the last deadline reported,
// whatever becomes of the runner (killed, frozen, cut off from the store),
// and exits with the command's status, or ExitLost.
func (e Env) supervise(o runOptions) int {
	say := e.sayer(o.verbose)
	// Not found or not executable: say so before taking the lease.
	if _, err := exec.LookPath(o.argv[0]); err != nil {
		fmt.Fprintf(e.Stderr, "leasehold run: %s\n", oneLine(err.Error()))
		return execFailure(err)
	}
	if err := adoptOrphans(); err != nil {
		say("processes that leave the command's group are out of reach: %v", err)
	}
	// From here on the signals leasehold forwards are caught: before the
	// command starts they abort the wait; after, they go to the command.
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, forwardedSignals...)
	defer signal.Stop(sigs)

	r, err := e.startRunner(o)
	if err != nil {
		fmt.Fprintf(e.Stderr, "leasehold run: %s\n", oneLine(err.Error()))
		return ExitRunFailed
	}
	defer r.orders.Close()

	token, deadline, code, ok := r.awaitLease(sigs)
	if !ok {
		return code
	}
	cmd, code := e.startCommand(o, token)
	if cmd == nil {
		fmt.Fprintln(r.orders, msgDone) // nothing ran: release
		r.orders.Close()
		<-r.exited
		return code
	}
	s := &supervision{e: e, o: o, say: say, r: r, t: &tree{cmd: cmd, runner: r.proc.Pid}, deadline: deadline}
	fmt.Fprintf(r.orders, "%s %d\n", msgPgid, cmd.Pid)
	return s.loop(sigs)
}

// runnerProc is the runner as the supervisor sees it: its process, its
// reports, its exit, and the pipe of orders to it.
type runnerProc struct {
	proc    *os.Process
	reports <-chan message
	exited  chan *os.ProcessState
	orders  *os.File
}

// startRunner starts the runner with run's flags, its stdout a pipe of
// reports and its stdin a pipe of orders.
func (e Env) startRunner(o runOptions) (*runnerProc, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	args := []string{self, runnerCommand, "--store", o.store, "--key", o.key, "--ttl", o.ttl.String(), "--wait", o.wait.String()}
	if o.verbose {
		args = append(args, "-v")
	}
	args = append(args, "--", o.argv[0])
	repR, repW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	ordR, ordW, err := os.Pipe()
	if err != nil {
		repR.Close()
		repW.Close()
		return nil, err
	}
	p, err := os.StartProcess(self, args, &os.ProcAttr{
		Files: []*os.File{ordR, repW, os.Stderr},
		Sys:   runnerAttr(),
	})
	repW.Close()
	ordR.Close()
	if err != nil {
		repR.Close()
		ordW.Close()
		return nil, err
	}
	r := &runnerProc{proc: p, reports: receive(repR), exited: make(chan *os.ProcessState, 1), orders: ordW}
	go func() {
		ps, _ := p.Wait()
		r.exited <- ps
	}()
	return r, nil
}

// awaitLease waits for the runner to take the lease. ok is false when it
// did not (the runner has said why) or a signal came first; code is then
// leasehold run's exit status.
func (r *runnerProc) awaitLease(sigs <-chan os.Signal) (token, deadline int64, code int, ok bool) {
	reports := r.reports
	for {
		select {
		case m, open := <-reports:
			if !open {
				reports = nil
				continue
			}
			switch m.verb {
			case msgDeadline:
				if n, ok := m.int64Arg(); ok {
					deadline = max(deadline, n)
				}
			case msgToken:
				if n, ok := m.int64Arg(); ok {
					return n, deadline, 0, true
				}
			}
		case ps := <-r.exited:
			return 0, 0, runnerStatus(ps), false
		case sig := <-sigs:
			_ = r.proc.Signal(sigTERM) // ends the wait; a lease taken meanwhile is released
			<-r.exited
			return 0, 0, 128 + signalNumber(sig), false
		}
	}
}

// runnerStatus is leasehold run's exit status when the runner exited
// before the command started: the runner's own, which it has explained.
func runnerStatus(ps *os.ProcessState) int {
	if ps == nil || ps.ExitCode() < 0 {
		return ExitRunFailed
	}
	return ps.ExitCode()
}

// startCommand starts the command, with the lease's key and fencing token
// in its environment. On failure it has reported why, and returns the exit
// status with a nil process.
func (e Env) startCommand(o runOptions, token int64) (*os.Process, int) {
	path, err := exec.LookPath(o.argv[0])
	if err == nil {
		env := append(withoutEnv(os.Environ(), EnvKey, EnvToken),
			EnvKey+"="+o.key, EnvToken+"="+strconv.FormatInt(token, 10))
		var p *os.Process
		p, err = os.StartProcess(path, o.argv, &os.ProcAttr{
			Env:   env,
			Files: []*os.File{os.Stdin, os.Stdout, os.Stderr},
			Sys:   childAttr(),
		})
		if err == nil {
			return p, ExitOK
		}
	}
	fmt.Fprintf(e.Stderr, "leasehold run: %s\n", oneLine(err.Error()))
	return nil, execFailure(err)
}

// supervision is the supervisor's state while the command runs.
type supervision struct {
	e   Env
	o   runOptions
	say func(string, ...any)
	r   *runnerProc
	t   *tree

	deadline int64 // the last deadline reported, on the boot clock
	status   int   // the command's exit status, once it exited
	lost     bool  // the lease is lost, or may be: exit ExitLost
	// stopping: the tree got SIGTERM at stopFrom (boot clock) and gets
	// SIGKILL at killAt; killed: it got SIGKILL.
	stopping, killed bool
	killAt           int64
}

// pollEvery is how often the supervisor looks for the tree's processes
// while it stops them.
const pollEvery = 20 * time.Millisecond

// loop supervises the command until its tree is gone, then has the runner
// release the lease, and returns leasehold run's exit status.
func (s *supervision) loop(sigs <-chan os.Signal) int {
	waited := make(chan *os.ProcessState, 1)
	go func() {
		ps, _ := s.t.cmd.Wait()
		waited <- ps
	}()
	reports, runnerExited := s.r.reports, s.r.exited
	var runnerPS *os.ProcessState
	runnerGone := false
	for {
		if s.t.exited {
			if s.t.empty() {
				break
			}
			if !s.stopping {
				// Whatever the command left behind must not outlive the
				// lease, which is released next.
				s.say("the command exited and left processes behind: stopping them")
				s.stop()
			}
		}
		wake := time.NewTimer(s.nextWake())
		select {
		case ps := <-waited:
			s.t.exited = true
			s.status = exitStatus(ps, nil)
		case m, open := <-reports:
			if !open {
				reports = nil
				break
			}
			s.report(m)
		case ps := <-runnerExited:
			runnerExited, runnerGone, runnerPS = nil, true, ps
			if !s.lost {
				fmt.Fprintf(s.e.Stderr, "leasehold: the runner that renews the lease on %q %s: stopping the command before the lease expires\n", s.o.key, describeExit(ps))
				s.lost = true
				s.stop()
			}
		case sig := <-sigs:
			s.say("forwarding %v to the command", sig)
			signalGroup(s.t.cmd, sig)
		case <-wake.C:
			s.onTime()
		}
		wake.Stop()
	}
	// The tree is gone: the runner may release the lease.
	fmt.Fprintln(s.r.orders, msgDone)
	s.r.orders.Close()
	if !runnerGone {
		runnerPS = <-runnerExited
	}
	if s.lost || (runnerPS != nil && runnerPS.ExitCode() == ExitLost) {
		return ExitLost
	}
	return s.status
}

// report handles a report of the runner.
func (s *supervision) report(m message) {
	switch m.verb {
	case msgDeadline:
		if n, ok := m.int64Arg(); ok && n > s.deadline {
			s.deadline = n
		}
	case msgLost:
		if !s.lost {
			s.lost = true
			s.stop()
		}
	}
}

// nextWake is how long the supervisor may sleep before it must act:
// SIGTERM grace before the deadline, SIGKILL at it (or grace after the
// SIGTERM), and while stopping, the next look for the tree's processes.
func (s *supervision) nextWake() time.Duration {
	now := bootNanos()
	switch {
	case s.killed:
		return pollEvery
	case s.stopping:
		return min(pollEvery, time.Duration(s.killAt-now))
	}
	return max(0, time.Duration(s.killBy()-int64(s.o.grace)-now))
}

// killBy is when the tree gets SIGKILL at the latest: killLead before the
// deadline the runner reported, so that the kill, late as it may be on a
// loaded host, lands before the runner's own deadline too.
func (s *supervision) killBy() int64 { return s.deadline - int64(killLead(s.o.ttl)) }

// killLead is how long before the runner's deadline the supervisor kills:
// half the safety margin. The runner's deadline is itself the safety
// margin before the store can expire the lease.
func killLead(ttl time.Duration) time.Duration { return core.SafetyMargin(ttl) / 2 }

// onTime acts on the clock: the SIGTERM grace before the deadline, the
// SIGKILL at it.
func (s *supervision) onTime() {
	now := bootNanos()
	switch {
	case s.killed:
		s.t.signal(sigKILL) // whatever the last look found
	case s.stopping && now >= s.killAt:
		fmt.Fprintf(s.e.Stderr, "leasehold: the command outlived --grace %v: SIGKILL\n", s.o.grace)
		s.kill()
	case !s.stopping && now >= s.killBy()-int64(s.o.grace):
		fmt.Fprintf(s.e.Stderr, "leasehold: giving up the lease on %q: no renewal confirmed in time (the runner is frozen or starved, or the store does not answer): stopping the command before the lease can expire\n", s.o.key)
		s.lost = true
		s.stop()
	}
}

// stop sends SIGTERM to the tree, and sets SIGKILL for grace later, or at
// the deadline if that comes first.
func (s *supervision) stop() {
	if s.stopping || s.killed {
		return
	}
	s.stopping = true
	now := bootNanos()
	s.killAt = min(now+int64(s.o.grace), s.killBy())
	if s.o.grace == 0 || now >= s.killAt {
		s.kill()
		return
	}
	s.say("SIGTERM to the command, SIGKILL in %v", time.Duration(s.killAt-now).Round(time.Millisecond))
	s.t.signal(sigTERM)
}

// kill sends SIGKILL to the tree; the loop goes on until it is gone.
func (s *supervision) kill() {
	s.stopping, s.killed = true, true
	s.t.signal(sigKILL)
}

// describeExit says how a process ended, for messages.
func describeExit(ps *os.ProcessState) string {
	if ps == nil {
		return "is gone"
	}
	if n, ok := signaled(ps); ok {
		return fmt.Sprintf("was killed (signal %d)", n)
	}
	return fmt.Sprintf("exited (status %d)", ps.ExitCode())
}

// graceLimit is the longest --grace that fits in a lease of ttl: the
// supervisor sends SIGTERM grace before it must kill (the deadline of the
// last confirmed renewal, less killLead), and that must not come before the
// next renewal, sent ttl/3 after the last, has had ttl/3 to be confirmed.
func graceLimit(ttl time.Duration) time.Duration {
	return ttl/3 - core.SafetyMargin(ttl) - killLead(ttl)
}
