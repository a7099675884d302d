// Command busy keeps every core of the machine busy, to run the project's
// timing tests as a loaded CI runner would run them: one goroutine spinning
// per core (or -n of them), at normal priority, until the duration given
// ends or the process is stopped.
//
//	go run ./internal/busy 30m &   # then run the tests, and stop it by its PID
//
// A test may fail only for what it tests: under busy, a timing test must
// pass or say "inconclusive" with the lateness it measured (see
// conformance/lateness), never blame the code.
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"sync/atomic"
	"time"
)

func main() {
	n := flag.Int("n", runtime.NumCPU(), "how many goroutines spin")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: busy [-n goroutines] duration")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 {
		flag.Usage()
		os.Exit(2)
	}
	d, err := time.ParseDuration(flag.Arg(0))
	if err != nil || d <= 0 {
		fmt.Fprintf(os.Stderr, "busy: %q is not a positive duration\n", flag.Arg(0))
		os.Exit(2)
	}
	runtime.GOMAXPROCS(*n + 1) // the spinners, and the main goroutine's timer
	var spins atomic.Int64
	for range *n {
		go func() {
			for {
				spins.Add(1)
			}
		}()
	}
	time.Sleep(d)
	fmt.Fprintf(os.Stderr, "busy: %d goroutines spun for %v\n", *n, d)
}
