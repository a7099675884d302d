package testserver

import (
	"runtime"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// HeldRun is one instance that Held benchmarks: an instance of a service
// holding many leases.
type HeldRun struct {
	// Name prefixes the run's metrics.
	Name string
	// Period moves the instance through one renewal period (its manual
	// clock by ttl/3) and returns once every renewal the period triggered
	// has its answer.
	Period func()
	// Calls, if not nil, counts the instance's store calls.
	Calls *atomic.Int64
}

// Held benchmarks instances that hold many leases: each iteration moves
// every run through one renewal period, in turn (each first as often as
// the others), so that a drift of the server or the machine hits them
// alike. Per period and per run it reports, prefixed with the run's name:
//
//   - unit (such as "stmts/period"): the store calls Calls counted;
//   - cpu-ms/period: the CPU time of the process, user and system;
//   - allocs/period: the heap allocations of the process;
//   - slowest-ms: the wall time of the period, which is the latency of
//     its slowest renewal, since every renewal of a period is sent when it
//     begins;
//
// and, for the first run against the last, the ratio of their slowest
// renewals ("<first>/<last>-slowest"). It reports goroutines-grown too: the
// goroutines of the process after the last period less those before the
// first, 0 when each instance keeps a constant number however many
// leases it renews.
func Held(b *testing.B, unit string, runs ...HeldRun) {
	b.Helper()
	type totals struct {
		calls, allocs int64
		cpu, wall     time.Duration
	}
	sums := make([]totals, len(runs))
	for _, r := range runs {
		if r.Calls != nil {
			r.Calls.Store(0)
		}
	}
	before := runtime.NumGoroutine()
	var ms runtime.MemStats
	for i := 0; b.Loop(); i++ {
		for j := range runs {
			k := (i + j) % len(runs)
			r := runs[k]
			runtime.ReadMemStats(&ms)
			allocs, cpu, start := ms.Mallocs, cpuTime(b), time.Now()
			r.Period()
			wall := time.Since(start)
			sums[k].cpu += cpuTime(b) - cpu
			sums[k].wall += wall
			runtime.ReadMemStats(&ms)
			sums[k].allocs += int64(ms.Mallocs - allocs)
		}
	}
	n := float64(b.N)
	for k, r := range runs {
		if r.Calls != nil {
			b.ReportMetric(float64(r.Calls.Load())/n, r.Name+"-"+unit)
		}
		b.ReportMetric(float64(sums[k].cpu)/float64(time.Millisecond)/n, r.Name+"-cpu-ms/period")
		b.ReportMetric(float64(sums[k].allocs)/n, r.Name+"-allocs/period")
		b.ReportMetric(float64(sums[k].wall)/float64(time.Millisecond)/n, r.Name+"-slowest-ms")
	}
	if last := len(runs) - 1; last > 0 {
		b.ReportMetric(float64(sums[0].wall)/float64(sums[last].wall), runs[0].Name+"/"+runs[last].Name+"-slowest")
	}
	b.ReportMetric(float64(runtime.NumGoroutine()-before), "goroutines-grown")
}

// cpuTime returns the CPU time the process has used, user and system.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
