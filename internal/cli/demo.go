package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/leasehold/leasehold/core"
	"github.com/leasehold/leasehold/core/coretest"
	sqlitestore "github.com/leasehold/leasehold/drivers/sqlite"
)

// The demo's schedule: fast, so that the whole story takes seconds.
const (
	demoTick     = 400 * time.Millisecond
	demoTTL      = 2 * time.Second
	demoJob      = "nightly-report"
	demoStepWait = 30 * time.Second // a step that takes longer has failed
)

func (e Env) demo(args []string) int {
	fs := newFlagSet("demo")
	debug := fs.Bool("debug", false, "")
	if code, done := e.parse(fs, args); done {
		return code
	}
	if fs.NArg() > 0 {
		return e.usageErr(fmt.Errorf("demo takes no arguments, got %q", fs.Arg(0)))
	}
	ctx, stop := interruptible()
	defer stop()
	level := slog.LevelInfo
	if *debug {
		level = slog.LevelDebug
	}
	if err := Demo(ctx, e.Stdout, level); err != nil {
		return e.fail(err, ExitError)
	}
	return ExitOK
}

// Demo tells the story of a job shared by three instances, on one SQLite
// file in a temporary directory, to w: the library's own logs (every
// instance's, from level on: slog.LevelInfo tells the story, LevelDebug adds
// every acquisition, release and skipped tick) and the demo's narration. It
// returns once the story is told and everything is closed and removed.
func Demo(ctx context.Context, w io.Writer, level slog.Level) error {
	// Every line, the narration's and the library's logs, goes through one
	// *log.Logger, which writes each line whole and one at a time: lines
	// from several goroutines never mix.
	out := log.New(w, "", 0)
	dir, err := os.MkdirTemp("", "leasehold-demo-")
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	defer os.RemoveAll(dir)

	d := &demo{ctx: ctx, out: out, byName: map[string]*demoInstance{}, changed: make(chan struct{}), skips: map[string]int{}, lost: map[string]error{}, ended: map[string]bool{}}
	logger := slog.New(slog.NewTextHandler(lineWriter{out}, &slog.HandlerOptions{Level: level, ReplaceAttr: shortTime}))
	path := filepath.Join(dir, "locks.db")
	d.say("== leasehold demo: three instances of one service share a job, on one SQLite file (%s).", path)
	d.say("   Job %q: on one instance; every instance's ticker fires every %v; lease ttl %v.", demoJob, demoTick, demoTTL)
	d.say("   The job writes a report to a resource that keeps the highest fencing token it has seen and refuses lower ones.")

	defer d.shutdown()
	for _, name := range []string{"node-1", "node-2", "node-3"} {
		if err := d.addInstance(name, path, logger.With("instance", name)); err != nil {
			return err
		}
	}
	return d.story()
}

// demo is the state of the story: the instances, and what they did to the
// fenced resource. mu guards everything below it (the resource too, so that
// its verdicts and the lists below stay in one order); changed is closed and
// replaced at every change, for waitFor.
type demo struct {
	ctx       context.Context
	out       *log.Logger
	instances []*demoInstance
	byName    map[string]*demoInstance

	mu       sync.Mutex
	changed  chan struct{}
	resource coretest.FencedResource
	accepted []demoWrite
	refused  []demoWrite
	skips    map[string]int   // "it runs on another instance" skips, by instance
	lost     map[string]error // lock-lost events, by instance
	ended    map[string]bool  // instances whose refused run has returned and said so
	freeze   string           // the instance whose next run freezes
	frozen   *demoWrite       // the write held by the frozen run
}

type demoWrite struct {
	instance string
	token    int64
}

type demoInstance struct {
	name  string
	clock *pausableClock
	store *sqlitestore.Store
	locks *core.Locks
	job   *core.Job
	log   *slog.Logger

	mu      sync.Mutex
	ticking bool
	timer   core.Timer
	ticks   sync.WaitGroup
	closed  bool
}

func (d *demo) addInstance(name, path string, log *slog.Logger) error {
	st, err := sqlitestore.Open(path)
	if err != nil {
		return fmt.Errorf("demo: %s: %w", name, err)
	}
	inst := &demoInstance{name: name, clock: newPausableClock(), store: st, log: log}
	inst.locks, err = core.New(st,
		core.WithClock(inst.clock),
		core.WithLogger(log),
		core.WithDefaultTTL(demoTTL),
		core.WithInstanceName(name),
		core.WithEventHandler(func(ev core.Event) {
			if ev.Type == core.EventLockLost {
				d.update(func() { d.lost[name] = ev.Err })
			}
		}))
	if err != nil {
		st.Close()
		return fmt.Errorf("demo: %s: %w", name, err)
	}
	inst.job, err = inst.locks.Job(d.report(inst), core.WithJobKey(demoJob), core.OnOneInstance())
	if err != nil {
		inst.locks.Close(context.Background())
		st.Close()
		return fmt.Errorf("demo: %s: %w", name, err)
	}
	d.instances = append(d.instances, inst)
	d.byName[name] = inst
	return nil
}

// story tells the demo in four steps, each waiting for what it shows to
// happen: one instance runs the job while the others skip; the owner
// freezes and another takes over; the frozen owner resumes, loses its lease
// and has its late write refused; the new owner shuts down cleanly and hands
// the job over at once.
func (d *demo) story() error {
	owner, err := d.stepOneInstanceRuns()
	if err != nil {
		return err
	}
	frozen, successor, err := d.stepOwnerFreezes(owner)
	if err != nil {
		return err
	}
	if err := d.stepOwnerResumes(owner, frozen, successor); err != nil {
		return err
	}
	if err := d.stepOwnerShutsDown(); err != nil {
		return err
	}
	d.shutdown()
	d.summary(frozen)
	return nil
}

// stepOneInstanceRuns starts every instance's ticks and waits until one of them, the
// owner it returns, has run the job three times while the others skip.
func (d *demo) stepOneInstanceRuns() (owner string, err error) {
	d.say("== (1) Every tick fires on all three instances: the first to take the job's lease runs the job, the others skip.")
	for i, inst := range d.instances {
		d.startTicking(inst, time.Duration(i)*demoTick/3)
	}
	err = d.waitFor("the first owner to run the job three times while the others skip", func() bool {
		if len(d.accepted) < 3 {
			return false
		}
		owner = d.accepted[len(d.accepted)-1].instance
		for _, inst := range d.instances {
			if inst.name != owner && d.skips[inst.name] == 0 {
				return false
			}
		}
		return true
	})
	if err != nil {
		return "", err
	}
	d.say("   %s owns the job's lease and runs every tick; the other instances skip theirs (\"it runs on another instance\").", owner)
	return owner, nil
}

// stepOwnerFreezes freezes owner in the middle of a run and waits until
// another instance has taken the job over. It returns the frozen run's
// write, still on its way, and the successor's first write.
func (d *demo) stepOwnerFreezes(owner string) (frozen, successor demoWrite, err error) {
	d.say("== (2) %s freezes in the middle of a run: a stop-the-world pause (a long GC, a frozen VM). Its timers stop, so it renews nothing.", owner)
	d.update(func() { d.freeze = owner })
	if err := d.waitFor(owner+" to freeze", func() bool {
		if d.frozen == nil {
			return false
		}
		frozen = *d.frozen
		return true
	}); err != nil {
		return frozen, successor, err
	}
	d.say("   %s is frozen with fencing token %d; its write is on its way. Its lease expires %v after its last renewal, on the store's clock.", owner, frozen.token, demoTTL)
	if err := d.waitFor("another instance to take the job over", func() bool {
		n := 0
		for _, w := range d.accepted {
			if w.token > frozen.token {
				successor = w
				n++
			}
		}
		return n >= 2
	}); err != nil {
		return frozen, successor, err
	}
	d.say("   The lease expired: %s took the job over at its next tick, with fencing token %d.", successor.instance, successor.token)
	return frozen, successor, nil
}

// stepOwnerResumes resumes the frozen owner and waits until it has lost its
// lease, its late write has been refused, and it skips its ticks.
func (d *demo) stepOwnerResumes(owner string, frozen, successor demoWrite) error {
	d.say("== (3) %s resumes. Its renewal comes too late: ttl has passed without a confirmed renewal, so its lease is lost and its run's context is cancelled.", owner)
	var skipsBefore int
	d.update(func() { skipsBefore = d.skips[owner] })
	d.byName[owner].clock.Resume()
	if err := d.waitFor(owner+"'s loss and its late write", func() bool {
		return d.lost[owner] != nil && len(d.refused) > 0 && d.ended[owner] && d.skips[owner] > skipsBefore
	}); err != nil {
		return err
	}
	d.say("   Fencing: the resource refused %s's late write (token %d) because %s had written with token %d. %s now skips its ticks.",
		owner, frozen.token, successor.instance, successor.token, owner)
	return nil
}

// stepOwnerShutsDown closes the instance that owns the job now and waits
// until another one has taken the job over, without waiting for the ttl.
func (d *demo) stepOwnerShutsDown() error {
	var current demoWrite
	d.update(func() { current = d.accepted[len(d.accepted)-1] })
	leaving := d.byName[current.instance]
	d.say("== (4) %s shuts down cleanly (Locks.Close): it hands the job's lease back at once, and the next tick elsewhere takes it.", leaving.name)
	d.say("   (A lease whose run started less than a second ago is kept for the rest of that second, so that the same tick, firing a little later elsewhere, is skipped.)")
	d.stopTicking(leaving)
	ctx, cancel := context.WithTimeout(d.ctx, 10*time.Second)
	err := leaving.locks.Close(ctx)
	cancel()
	leaving.closed = true
	if err != nil {
		return fmt.Errorf("demo: close %s: %w", leaving.name, err)
	}
	var next demoWrite
	if err := d.waitFor("another instance to take the job after the shutdown", func() bool {
		w := d.accepted[len(d.accepted)-1]
		if w.instance == leaving.name || w.token <= current.token {
			return false
		}
		next = w
		return true
	}); err != nil {
		return err
	}
	d.say("   %s took the job over at its next tick, with fencing token %d, without waiting for the ttl.", next.instance, next.token)
	return nil
}

// summary tells what the resource accepted and refused.
func (d *demo) summary(frozen demoWrite) {
	var tokens []int64
	var reports int
	d.update(func() {
		reports = len(d.accepted)
		for _, w := range d.accepted {
			if len(tokens) == 0 || tokens[len(tokens)-1] != w.token {
				tokens = append(tokens, w.token)
			}
		}
	})
	d.say("== Done: the resource accepted %d reports, under fencing tokens %v, and refused %s's late one (token %d).",
		reports, tokens, frozen.instance, frozen.token)
	d.say("   Next: leasehold help run, leasehold help status, and the page \"The leasehold command\" of the leasehold documentation.")
}

// report is the job's function on inst: it writes a report, with the
// fencing token of the job's lease, to the fenced resource. The run that
// the story picks freezes between sending its write and the write's arrival.
func (d *demo) report(inst *demoInstance) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		token := core.LockFromContext(ctx).Token()
		freeze := false
		d.update(func() {
			if d.freeze == inst.name {
				freeze, d.freeze = true, ""
			}
		})
		if freeze {
			inst.clock.Pause()
			d.update(func() { d.frozen = &demoWrite{instance: inst.name, token: token} })
			<-inst.clock.Frozen()
			// The loss was declared while the clock resumed; the run's
			// context follows it at once.
			select {
			case <-ctx.Done():
				d.say("   %s's run context is cancelled (%v), but its write was sent before the pause and arrives now:", inst.name, context.Cause(ctx))
			case <-time.After(demoStepWait):
			}
		}
		return d.write(inst.name, token)
	}
}

// write sends instance's report to the fenced resource, which keeps the
// highest token it has seen and refuses a lower one, and tells the verdict.
func (d *demo) write(instance string, token int64) error {
	var err error
	d.update(func() {
		if err = d.resource.Write(token, instance); err != nil {
			seen, _ := d.resource.Read()
			d.refused = append(d.refused, demoWrite{instance, token})
			d.say("   resource: refused the write of %s with fencing token %d, as intended: it has seen token %d", instance, token, seen)
			return
		}
		d.accepted = append(d.accepted, demoWrite{instance, token})
		d.say("   resource: accepted report #%d from %s (fencing token %d)", len(d.accepted), instance, token)
	})
	return err
}

// startTicking fires the job on inst every demoTick, on inst's clock (so a
// frozen instance does not tick), starting after offset.
func (d *demo) startTicking(inst *demoInstance, offset time.Duration) {
	var tick func()
	tick = func() {
		inst.mu.Lock()
		defer inst.mu.Unlock()
		if !inst.ticking {
			return
		}
		inst.timer = inst.clock.AfterFunc(demoTick, tick)
		inst.ticks.Add(1)
		go func() {
			defer inst.ticks.Done()
			d.runTick(inst)
		}()
	}
	inst.mu.Lock()
	inst.ticking = true
	inst.timer = inst.clock.AfterFunc(offset, tick)
	inst.mu.Unlock()
}

// stopTicking stops inst's ticks and waits for the runs in progress.
func (d *demo) stopTicking(inst *demoInstance) {
	inst.mu.Lock()
	inst.ticking = false
	if inst.timer != nil {
		inst.timer.Stop()
	}
	inst.mu.Unlock()
	inst.ticks.Wait()
}

// runEnding, when set by a test, is called with a run's error after the
// run returns and before the demo reports how it ended: a stall there must
// not reorder the story.
var runEnding func(error)

func (d *demo) runTick(inst *demoInstance) {
	err := inst.job.Run(d.ctx)
	if runEnding != nil {
		runEnding(err)
	}
	var skipped *core.SkippedError
	switch {
	case err == nil:
	case errors.As(err, &skipped):
		if skipped.Reason == core.SkipOtherInstance {
			d.update(func() { d.skips[inst.name]++ })
		}
	case d.ctx.Err() != nil:
	case errors.Is(err, coretest.ErrStaleToken):
		inst.log.Info("demo: the run's late write was refused, as intended", "err", oneLine(strings.ReplaceAll(err.Error(), "\n", "; ")))
		// Step (3) waits for this line, so that it comes before step (4).
		d.update(func() { d.ended[inst.name] = true })
	default:
		inst.log.Error("demo: the job's run failed", "err", oneLine(strings.ReplaceAll(err.Error(), "\n", "; ")))
	}
}

// shutdown ends every instance: it resumes a frozen one, stops the ticks,
// closes the Locks (handing leases back) and the stores. Calling it again
// does nothing.
func (d *demo) shutdown() {
	for _, inst := range d.instances {
		inst.clock.Resume()
	}
	for _, inst := range d.instances {
		d.stopTicking(inst)
	}
	for _, inst := range d.instances {
		if !inst.closed {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			if err := inst.locks.Close(ctx); err != nil {
				inst.log.Error("demo: close", "err", err)
			}
			cancel()
			inst.closed = true
		}
		if inst.store != nil {
			inst.store.Close()
			inst.store = nil
		}
	}
}

// update changes the story's state under its lock and wakes waitFor.
func (d *demo) update(fn func()) {
	d.mu.Lock()
	defer d.mu.Unlock()
	fn()
	close(d.changed)
	d.changed = make(chan struct{})
}

// waitFor waits until cond, called under the state's lock, holds.
func (d *demo) waitFor(what string, cond func() bool) error {
	timeout := time.NewTimer(demoStepWait)
	defer timeout.Stop()
	for {
		d.mu.Lock()
		ok := cond()
		changed := d.changed
		d.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-changed:
		case <-timeout.C:
			return fmt.Errorf("demo: gave up after %v waiting for %s", demoStepWait, what)
		case <-d.ctx.Done():
			return fmt.Errorf("demo: interrupted while waiting for %s", what)
		}
	}
}

// say writes one line of the demo's own narration.
func (d *demo) say(format string, args ...any) {
	d.out.Printf(format, args...)
}

// lineWriter passes each write, one log record of a slog handler, to a
// *log.Logger.
type lineWriter struct{ l *log.Logger }

func (w lineWriter) Write(p []byte) (int, error) {
	w.l.Print(string(p))
	return len(p), nil
}

// shortTime prints log times as 15:04:05.000.
func shortTime(groups []string, a slog.Attr) slog.Attr {
	if a.Key == slog.TimeKey && len(groups) == 0 && a.Value.Kind() == slog.KindTime {
		a.Value = slog.StringValue(a.Value.Time().Format("15:04:05.000"))
	}
	return a
}
