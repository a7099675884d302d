package lateness

import (
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestMeterSeesAStarvedProcess(t *testing.T) {
	// With one P, a goroutine that spins keeps the meter's goroutine off
	// the CPU until the scheduler preempts the spin (after about 10ms), so
	// the meter's next tick, due within Tick of the spin's start, runs
	// late by several milliseconds at least.
	prev := runtime.GOMAXPROCS(1)
	defer runtime.GOMAXPROCS(prev)
	m := Start()
	time.Sleep(2 * Tick)
	for spinUntil := time.Now().Add(60 * time.Millisecond); time.Now().Before(spinUntil); {
	}
	late := m.Stop()
	if !m.Explains(3 * time.Millisecond) {
		t.Fatalf("the meter saw %v of lateness while a spin held the only P for 60ms; want more than 3ms", late)
	}
	if v := m.Verdict(3 * time.Millisecond); !strings.HasPrefix(v, "inconclusive: this process ran ") || !strings.Contains(v, "rerun on a quieter machine") {
		t.Fatalf("Verdict = %q", v)
	}
}

func TestVerdictNamesTheFigures(t *testing.T) {
	m := &Meter{worst: 340 * time.Millisecond}
	want := "inconclusive: this process ran 340 ms late (the check tolerates 100 ms); rerun on a quieter machine or raise the ttl"
	if got := m.Verdict(100 * time.Millisecond); got != want {
		t.Fatalf("Verdict = %q, want %q", got, want)
	}
	if !m.Explains(100*time.Millisecond) || m.Explains(400*time.Millisecond) {
		t.Fatal("Explains: want true for a tolerance under the lateness, false above it")
	}
}

// TestMeterSeesTheWallClockJump: a wall clock that jumps a second ahead
// while no timer runs late (a paused and resumed virtual machine: stores
// then see a second pass that the process did not) explains a failure,
// and the verdict says why.
func TestMeterSeesTheWallClockJump(t *testing.T) {
	var ahead atomic.Int64
	m := start(func(now time.Time) time.Time { return now.Round(0).Add(time.Duration(ahead.Load())) })
	time.Sleep(3 * Tick)
	ahead.Store(int64(time.Second))
	time.Sleep(3 * Tick)
	m.Stop()
	if j := m.Jump(); j < 900*time.Millisecond || j > 1100*time.Millisecond {
		t.Fatalf("Jump = %v after the wall clock jumped 1s ahead; want about 1s", j)
	}
	if !m.Explains(400 * time.Millisecond) {
		t.Fatal("Explains(400ms) = false after a jump of 1s")
	}
	if v := m.Verdict(400 * time.Millisecond); !strings.HasPrefix(v, "inconclusive: the system's wall clock jumped ") || !strings.Contains(v, "(the check tolerates 400 ms)") {
		t.Fatalf("Verdict = %q", v)
	}
}

// TestMeterSeesASteadyClock is the control: the real clocks, with nothing
// stepping them, show no jump that a check of 50ms would count.
func TestMeterSeesASteadyClock(t *testing.T) {
	m := Start()
	time.Sleep(10 * Tick)
	m.Stop()
	if j := m.Jump(); j > 50*time.Millisecond {
		t.Fatalf("Jump = %v with no one stepping the clock", j)
	}
}

// TestMeterJumpIsOneReading: the meter compares the two clocks within one
// reading, so a goroutine descheduled while it reads them (here, a wall
// reading that takes 3ms to come back) shows no jump. Read one after the
// other, as the meter once did, they showed the delay as a jump of 3ms,
// and under a CPU hog the judge printed jumps of 1ms that never happened.
func TestMeterJumpIsOneReading(t *testing.T) {
	m := start(func(now time.Time) time.Time {
		time.Sleep(3 * time.Millisecond)
		return now.Round(0)
	})
	time.Sleep(5 * Tick)
	m.Stop()
	if j := m.Jump(); j != 0 {
		t.Fatalf("Jump = %v with no one stepping the clock", j)
	}
}

func TestStopTwice(t *testing.T) {
	m := Start()
	a := m.Stop()
	if b := m.Stop(); a != b {
		t.Fatalf("second Stop = %v, first %v", b, a)
	}
}

// recorder is a testing.TB that keeps what Check reports instead of
// ending the test.
type recorder struct {
	testing.TB
	fatal, skip string
	logs        int
}

func (r *recorder) Helper()                   {}
func (r *recorder) Fatal(args ...any)         { r.fatal = fmt.Sprint(args...) }
func (r *recorder) Skip(args ...any)          { r.skip = fmt.Sprint(args...) }
func (r *recorder) Logf(string, ...any)       { r.logs++ }
func (r *recorder) Fatalf(f string, a ...any) { r.fatal = fmt.Sprintf(f, a...) }

// A tolerance below zero stands for a process that ran late: any lateness
// the meter sees, even none, exceeds it.
const alwaysLate = -time.Nanosecond

func TestCheckFailsOnTimeFailureAtOnce(t *testing.T) {
	r, calls := &recorder{TB: t}, 0
	Check(r, time.Hour, func() string { calls++; return "took 2s, want 1s" })
	if calls != 1 || r.fatal != "took 2s, want 1s" {
		t.Fatalf("calls %d, fatal %q; want one attempt failing with its own words", calls, r.fatal)
	}
}

func TestCheckPasses(t *testing.T) {
	r, calls := &recorder{TB: t}, 0
	Check(r, alwaysLate, func() string { calls++; return "" })
	if calls != 1 || r.fatal != "" || r.skip != "" {
		t.Fatalf("calls %d, fatal %q, skip %q; want one passing attempt", calls, r.fatal, r.skip)
	}
}

func TestCheckRerunsALateFailure(t *testing.T) {
	r, calls := &recorder{TB: t}, 0
	Check(r, alwaysLate, func() string {
		calls++
		if calls == 1 {
			return "took 2s"
		}
		return ""
	})
	if calls != 2 || r.fatal != "" || r.logs != 1 {
		t.Fatalf("calls %d, fatal %q, logs %d; want a second, passing attempt after a logged late failure", calls, r.fatal, r.logs)
	}
}

func TestCheckTwiceLateIsInconclusive(t *testing.T) {
	r, calls := &recorder{TB: t}, 0
	Check(r, alwaysLate, func() string { calls++; return "took 2s" })
	got := r.fatal
	if testing.Short() {
		got = r.skip
	}
	if calls != 2 || !strings.HasPrefix(got, "inconclusive: this process ran ") || !strings.HasSuffix(got, ": took 2s") {
		t.Fatalf("calls %d, reported %q; want two attempts, then the inconclusive verdict with what the test saw", calls, got)
	}
}

func (r *recorder) Error(args ...any) { r.fatal = fmt.Sprint(args...) }

func TestJudge(t *testing.T) {
	r := &recorder{TB: t}
	Start().Judge(r, time.Hour, "lost 3 locks")
	if r.fatal != "lost 3 locks" {
		t.Fatalf("on time: reported %q; want the failure itself", r.fatal)
	}
	r = &recorder{TB: t}
	Start().Judge(r, alwaysLate, "lost 3 locks")
	got := r.fatal
	if testing.Short() {
		got = r.skip
	}
	if !strings.HasPrefix(got, "inconclusive: ") || !strings.HasSuffix(got, ": lost 3 locks") {
		t.Fatalf("late: reported %q; want the inconclusive verdict with the failure", got)
	}
	r = &recorder{TB: t}
	Start().Judge(r, alwaysLate, "")
	if r.fatal != "" || r.skip != "" {
		t.Fatalf("no failure: reported %q %q", r.fatal, r.skip)
	}
}
