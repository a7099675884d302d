// Package lateness measures how late the test process itself runs, so that a
// test that asserts timing can tell a slow machine from a broken system under
// test.
//
// A [Meter] runs a goroutine that sleeps for a short tick again and again and
// records how much later than asked each sleep returned. On an idle machine
// that is well under a millisecond; on a machine whose cores are busy with
// other work it is what every timer, goroutine and deadline of the test
// suffered too. A timing assertion that fails while the meter saw more
// lateness than the assertion tolerates proves nothing about the code under
// test: [Meter.Explains] says so, and [Meter.Verdict] words it.
//
// The meter also watches the system's wall clock against the monotonic one.
// Stores time leases on a server's wall clock; when it jumps (a virtual
// machine paused and resumed, or NTP stepping the clock), a lock expires
// early or late in real time while no timer of the process ran late. A jump
// larger than a check tolerates explains its failure the same way.
//
// The rule, stated once for every timing test of the project: a timing test
// fails only when the process ran on time; when it did not, the test runs
// again once, and if the process was late again the outcome is inconclusive,
// never a failure blamed on the code.
package lateness

import (
	"fmt"
	"sync"
	"testing"
	"time"
)

// Tick is how often a [Meter] looks at the clock.
const Tick = 5 * time.Millisecond

// Meter measures the process's lateness from [Start] until [Meter.Stop]. Its
// methods are safe for concurrent use.
type Meter struct {
	stop chan struct{}
	done chan struct{}
	wall func(now time.Time) time.Time // the wall clock's reading in now, without the monotonic one

	mu    sync.Mutex
	worst time.Duration
	jump  time.Duration
}

// Start starts a Meter. Stop it when the measured work ends.
func Start() *Meter {
	return start(func(now time.Time) time.Time { return now.Round(0) })
}

func start(wall func(now time.Time) time.Time) *Meter {
	m := &Meter{stop: make(chan struct{}), done: make(chan struct{}), wall: wall}
	go m.run()
	return m
}

func (m *Meter) run() {
	defer close(m.done)
	timer := time.NewTimer(Tick)
	defer timer.Stop()
	began := time.Now()
	wallBegan := m.wall(began)
	// clocks notes how far the wall clock has moved from the monotonic
	// one since the start. Both come from one reading, so a goroutine
	// descheduled between two reads cannot pass for a jump.
	clocks := func() {
		now := time.Now()
		d := m.wall(now).Sub(wallBegan) - now.Sub(began)
		m.noteJump(max(d, -d).Truncate(time.Millisecond))
	}
	asked := time.Now().Add(Tick)
	for {
		select {
		case <-m.stop:
			// The tick in progress counts too: a process starved until
			// now has been late by that much.
			m.note(time.Since(asked))
			clocks()
			return
		case now := <-timer.C:
			m.note(now.Sub(asked))
			// time.Now, not the timer's value: the goroutine itself may
			// run late after the timer fired.
			m.note(time.Since(asked))
			clocks()
			asked = time.Now().Add(Tick)
			timer.Reset(Tick)
		}
	}
}

func (m *Meter) note(late time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.worst = max(m.worst, late)
}

func (m *Meter) noteJump(jump time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.jump = max(m.jump, jump)
}

// Stop ends the measurement and returns the worst lateness seen. Calling it
// again returns the same figure.
func (m *Meter) Stop() time.Duration {
	select {
	case <-m.stop:
	default:
		close(m.stop)
	}
	<-m.done
	return m.Worst()
}

// Worst returns the worst lateness seen so far: how much later than asked a
// timer of the meter fired and its goroutine ran.
func (m *Meter) Worst() time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.worst
}

// Jump returns how far, at most, the wall clock moved from the monotonic
// clock since the start, either way, in whole milliseconds: none unless
// the clock was stepped or the machine paused.
func (m *Meter) Jump() time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.jump
}

// Explains reports whether what the meter saw so far is enough to explain
// a timing assertion that failed although it tolerates tolerance: the
// process ran later than that at least once, or the wall clock jumped by
// more than that.
func (m *Meter) Explains(tolerance time.Duration) bool {
	return m.Worst() > tolerance || m.Jump() > tolerance
}

// Verdict words an inconclusive outcome: how late the process ran, or how
// far the wall clock jumped, against what the assertion tolerates, and
// what to do.
func (m *Meter) Verdict(tolerance time.Duration) string {
	if jump := m.Jump(); jump > tolerance && jump > m.Worst() {
		return fmt.Sprintf("inconclusive: the system's wall clock jumped %d ms against its monotonic clock (the check tolerates %d ms), as when a virtual machine pauses and resumes or NTP steps the clock, and stores time leases by that clock; rerun on a machine whose clock runs steadily",
			jump.Milliseconds(), tolerance.Milliseconds())
	}
	return fmt.Sprintf("inconclusive: this process ran %d ms late (the check tolerates %d ms); rerun on a quieter machine or raise the ttl",
		m.Worst().Milliseconds(), tolerance.Milliseconds())
}

// Check runs attempt, the timed part of a test, under a Meter and applies the
// package's rule to the failure it returns ("" when its timing held). A
// failure while the process ran no later than tolerance fails t with it. A
// failure while the process ran later runs attempt again, once; a second
// late failure is inconclusive: t fails with [Meter.Verdict] and what
// attempt saw, never with the failure alone, and under -short t is skipped
// instead (a developer's quick run on a busy laptop). attempt must be
// repeatable (fresh keys), and fails t itself for what does not depend on
// time.
//
// tolerance is how late the process may run before the failure stops being
// evidence: the slack of the assertion, divided by the number of timer
// firings and goroutine hand-offs the timed path takes if it has several.
func Check(t testing.TB, tolerance time.Duration, attempt func() (failure string)) {
	t.Helper()
	var (
		m       *Meter
		failure string
	)
	for range 2 {
		m = Start()
		failure = attempt()
		m.Stop()
		if failure == "" {
			return
		}
		if !m.Explains(tolerance) {
			t.Fatal(failure)
			return
		}
		t.Logf("lateness: %s; this process ran %v late (the check tolerates %v): running it again", failure, m.Worst().Round(time.Millisecond), tolerance)
	}
	msg := m.Verdict(tolerance) + ". It failed twice, each time while the process was late; what it saw proves nothing about the code: " + failure
	if testing.Short() {
		t.Skip(msg)
		return
	}
	t.Fatal(msg)
}

// Judge reports failure, a timing failure that a test cannot run again
// (it killed servers to get there), by the package's rule without the
// rerun: as itself when the meter saw no more lateness than tolerance, else
// as inconclusive, with [Meter.Verdict] (skipped under -short). It stops
// the meter. An empty failure reports nothing.
func (m *Meter) Judge(t testing.TB, tolerance time.Duration, failure string) {
	t.Helper()
	m.Stop()
	switch {
	case failure == "":
	case !m.Explains(tolerance):
		t.Error(failure)
	case testing.Short():
		t.Skip(m.Verdict(tolerance) + "; what the test saw proves nothing about the code: " + failure)
	default:
		t.Error(m.Verdict(tolerance) + "; what the test saw proves nothing about the code: " + failure)
	}
}
