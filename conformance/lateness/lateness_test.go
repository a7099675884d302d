package lateness

import (
	"runtime"
	"strings"
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

func TestStopTwice(t *testing.T) {
	m := Start()
	a := m.Stop()
	if b := m.Stop(); a != b {
		t.Fatalf("second Stop = %v, first %v", b, a)
	}
}
