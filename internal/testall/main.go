// Command testall runs the tests of every module of the workspace, with
// the race detector, and ends with a summary a reader can act on: how
// many tests ran, passed, failed and were skipped, how many of the skips
// (Ginkgo specs included) were for want of a database server, and the line
// that gives the tests their servers.
//
// From the repository's root:
//
//	go run ./internal/testall            # go test -race -json work
//	go run ./internal/testall -run Foo   # extra flags go to go test
//
// It runs go test with -json and reads its events. A test that
// internal/testserver skips says so with the prefix "testserver: " (see
// testserver.SkipPrefix); a Ginkgo suite run by testserver.RunSuite prints
// one "testserver: suite" line with its counts. Each package's test binary
// has a timeout (-timeout, 30 minutes unless given), after which go test
// fails it with the stacks of its goroutines. The exit status is go
// test's: 0 when everything passed.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
)

// skipPrefix starts the message of every test internal/testserver skips
// for want of a server (testserver.SkipPrefix; this module cannot import
// that one).
const skipPrefix = "testserver: "

// suiteLine is what testserver.RunSuite prints after a Ginkgo suite.
var suiteLine = regexp.MustCompile(`testserver: suite (.+): (\d+) specs, (\d+) ran, (\d+) skipped without a server`)

// event is one line of go test -json (cmd/test2json).
type event struct {
	Action     string
	Package    string
	ImportPath string // build-output, build-fail
	Test       string
	Elapsed    float64
	Output     string
}

// tally holds what the run has seen so far.
type tally struct {
	passed, failed, skipped, serverSkipped int
	specs, specsRan, specsServerSkipped    int
	failedPkgs                             []string
	output                                 map[string][]string // test (package + " " + name) -> its output
	serverSkip                             map[string]bool
}

func main() {
	args := goTestArgs(os.Args[1:], runtime.GOMAXPROCS(0))
	start := time.Now()
	cmd := exec.Command("go", args...)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		fatal(err)
	}
	fmt.Printf("testall: go %s\n", strings.Join(args, " "))
	if err := cmd.Start(); err != nil {
		fatal(err)
	}
	t := &tally{output: map[string][]string{}, serverSkip: map[string]bool{}}
	t.read(stdout, os.Stdout)
	runErr := cmd.Wait()
	t.summary(os.Stdout, time.Since(start))
	if runErr != nil {
		if exit, ok := runErr.(*exec.ExitError); ok {
			os.Exit(exit.ExitCode())
		}
		fatal(runErr)
	}
	if t.failed > 0 || len(t.failedPkgs) > 0 {
		os.Exit(1)
	}
}

// goTestArgs returns go test's arguments for the user's flags and
// packages on a machine of cpus CPUs. Unless the user says otherwise, it
// runs twice as many packages at once as there are CPUs (go test's
// default is as many): the longest packages spend most of their time
// waiting for leases to expire and servers to answer, not computing, and
// a cold run on two cores takes about 12 minutes one package per CPU
// and under 10 two per CPU.
func goTestArgs(user []string, cpus int) []string {
	args := []string{"test", "-race", "-json"}
	if !hasFlag(user, "timeout") {
		args = append(args, "-timeout=30m")
	}
	if !hasFlag(user, "p") {
		args = append(args, "-p="+strconv.Itoa(2*max(cpus, 1)))
	}
	args = append(args, user...)
	if !slices.ContainsFunc(user, func(a string) bool { return !strings.HasPrefix(a, "-") && strings.Contains(a, "/") || a == "work" }) {
		args = append(args, "work")
	}
	return args
}

// hasFlag reports whether args set the go test flag name, as -name,
// --name, -name=v or --name=v.
func hasFlag(args []string, name string) bool {
	return slices.ContainsFunc(args, func(a string) bool {
		a = strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-")
		return a == name || strings.HasPrefix(a, name+"=")
	})
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "testall:", err)
	os.Exit(2)
}

// read consumes go test's events, printing a line per package and the
// output of whatever fails.
func (t *tally) read(r io.Reader, w io.Writer) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			fmt.Fprintln(w, sc.Text()) // not an event: pass it on
			continue
		}
		t.add(e, w)
	}
}

func (t *tally) add(e event, w io.Writer) {
	top, _, sub := strings.Cut(e.Test, "/") // a subtest's output is its test's
	key := e.Package + " " + top
	switch e.Action {
	case "build-output":
		fmt.Fprint(w, e.Output)
	case "output":
		t.output[key] = append(t.output[key], e.Output)
		if e.Test != "" && strings.Contains(e.Output, skipPrefix) && !strings.Contains(e.Output, "testserver: suite") {
			t.serverSkip[key] = true
		}
		if m := suiteLine.FindStringSubmatch(e.Output); m != nil {
			n := func(i int) int { v, _ := strconv.Atoi(m[i]); return v }
			t.specs += n(2)
			t.specsRan += n(3)
			t.specsServerSkipped += n(4)
		}
	case "pass", "fail", "skip":
		if e.Test == "" { // the package
			t.packageDone(e, w)
			return
		}
		if sub { // subtests count within their test
			return
		}
		switch e.Action {
		case "pass":
			t.passed++
		case "skip":
			t.skipped++
			if t.serverSkip[key] {
				t.serverSkipped++
			}
		case "fail":
			t.failed++
			fmt.Fprintf(w, "--- FAIL: %s (%s)\n", e.Test, e.Package)
			for _, l := range t.output[key] {
				fmt.Fprint(w, "    "+l)
			}
		}
		delete(t.output, key)
	}
}

func (t *tally) packageDone(e event, w io.Writer) {
	key := e.Package + " "
	switch e.Action {
	case "fail":
		t.failedPkgs = append(t.failedPkgs, e.Package)
		fmt.Fprintf(w, "FAIL  %s (%.1fs)\n", e.Package, e.Elapsed)
		for _, l := range t.output[key] {
			if !strings.HasPrefix(l, "FAIL") && !strings.HasPrefix(l, "ok") {
				fmt.Fprint(w, "    "+l)
			}
		}
	case "pass":
		fmt.Fprintf(w, "ok    %s (%.1fs)\n", e.Package, e.Elapsed)
	}
	delete(t.output, key)
}

// summary prints the counts, and how to run what was skipped.
func (t *tally) summary(w io.Writer, took time.Duration) {
	fmt.Fprintln(w)
	fmt.Fprintf(w, "testall: %d tests passed, %d failed, %d skipped, in %s\n",
		t.passed, t.failed, t.skipped, took.Round(time.Second))
	if t.specs > 0 {
		fmt.Fprintf(w, "testall: Ginkgo suites (each one test above): %d specs, %d ran, %d skipped without a server\n",
			t.specs, t.specsRan, t.specsServerSkipped)
	}
	if len(t.failedPkgs) > 0 {
		fmt.Fprintf(w, "testall: packages that failed: %s\n", strings.Join(t.failedPkgs, " "))
	}
	if t.serverSkipped == 0 && t.specsServerSkipped == 0 {
		return
	}
	fmt.Fprintf(w, "testall: %d tests and %d Ginkgo specs did NOT run: they need PostgreSQL, MySQL/MariaDB or Redis.\n",
		t.serverSkipped, t.specsServerSkipped)
	fmt.Fprintln(w, "testall: to run them, name running servers (or make a Docker engine reachable, and testcontainers starts them):")
	fmt.Fprintln(w, "  LEASEHOLD_TEST_POSTGRES='postgres://postgres@127.0.0.1:5432/test?sslmode=disable' LEASEHOLD_TEST_MYSQL='root@tcp(127.0.0.1:3306)/test' LEASEHOLD_TEST_REDIS='redis://127.0.0.1:6379/0' LEASEHOLD_TEST_REDIS_CLUSTER='127.0.0.1:7001,127.0.0.1:7002,127.0.0.1:7003' go run ./internal/testall")
}
