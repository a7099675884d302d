package cli

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold/core/coretest"
)

// demoLine is one line of the demo's output, with the attributes the test
// follows the story by.
type demoLine struct {
	n        int
	text     string
	instance string
	token    int64
}

var (
	instanceAttr = regexp.MustCompile(` instance=(\S+)`)
	tokenAttr    = regexp.MustCompile(` token=(\d+)`)
)

type demoOutput struct {
	t     *testing.T
	lines []demoLine
	at    int // the story is checked from here on
}

func parseDemo(t *testing.T, out string) *demoOutput {
	d := &demoOutput{t: t}
	for i, text := range strings.Split(out, "\n") {
		l := demoLine{n: i + 1, text: text}
		if m := instanceAttr.FindStringSubmatch(text); m != nil {
			l.instance = m[1]
		}
		if m := tokenAttr.FindStringSubmatch(text); m != nil {
			l.token, _ = strconv.ParseInt(m[1], 10, 64)
		}
		d.lines = append(d.lines, l)
	}
	return d
}

// next returns the first line after the last one found that matches, and
// fails the test if there is none: the story must happen in this order.
func (d *demoOutput) next(what string, match func(l demoLine) bool) demoLine {
	d.t.Helper()
	for i := d.at; i < len(d.lines); i++ {
		if match(d.lines[i]) {
			d.at = i + 1
			return d.lines[i]
		}
	}
	d.t.Fatalf("after line %d, no line shows %s", d.at, what)
	return demoLine{}
}

func contains(s string) func(demoLine) bool {
	return func(l demoLine) bool { return strings.Contains(l.text, s) }
}

const (
	msgLeaseTaken  = `msg="leasehold: job lease taken; this instance runs the job"`
	msgTickSkipped = `msg="leasehold: job tick skipped"`
	msgLockLost    = `msg="leasehold: lock lost; another holder may take it now"`
	msgHandedBack  = `msg="leasehold: job lease handed back"`
)

// TestDemoStoryInOrderWhenRunsEndLate: the frozen owner's run reports its
// refused write before step (4) begins, however long the run takes to
// return and say so. Under a CPU hog, step (4) came first before step (3)
// waited for that report. Not parallel: runEnding is the package's.
func TestDemoStoryInOrderWhenRunsEndLate(t *testing.T) {
	runEnding = func(err error) {
		if errors.Is(err, coretest.ErrStaleToken) {
			time.Sleep(time.Second)
		}
	}
	defer func() { runEnding = nil }()
	var buf bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := Demo(ctx, &buf, slog.LevelInfo); err != nil {
		t.Fatalf("Demo: %v\noutput:\n%s", err, buf.String())
	}
	defer func() {
		if t.Failed() {
			t.Logf("demo output:\n%s", buf.String())
		}
	}()
	checkDemoStory(t, parseDemo(t, buf.String()), false)
}

// TestDemo runs the demo and follows its story through its output, by the
// events (who took the lease, with which token, who lost it), never by
// their timing: at info, the story alone, with no error line for the
// refused write it sets out to show; with --debug, the library's debug
// lines too.
func TestDemo(t *testing.T) {
	for _, tc := range []struct {
		name  string
		level slog.Level
	}{{"info", slog.LevelInfo}, {"debug", slog.LevelDebug}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var buf bytes.Buffer
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			began := time.Now()
			if err := Demo(ctx, &buf, tc.level); err != nil {
				t.Fatalf("Demo: %v\noutput:\n%s", err, buf.String())
			}
			t.Logf("the demo took %v", time.Since(began))
			out := buf.String()
			defer func() {
				if t.Failed() {
					t.Logf("demo output:\n%s", out)
				}
			}()
			checkDemoStory(t, parseDemo(t, out), tc.level == slog.LevelDebug)
			if strings.Contains(out, "level=ERROR") || strings.Contains(out, "REFUSED") {
				t.Errorf("the demo's output reads like a failure: an ERROR line, or REFUSED in capitals")
			}
			if debug := strings.Contains(out, "level=DEBUG"); debug != (tc.level == slog.LevelDebug) {
				t.Errorf("debug lines shown: %v, want %v", debug, !debug)
			}
		})
	}
}

// checkDemoStory follows the demo's four steps through its output; with
// debug, through the library's skipped-tick lines too.
func checkDemoStory(t *testing.T, d *demoOutput, debug bool) {
	t.Helper()
	// The demo's file is in a temporary directory, removed at the end.
	intro := d.next("the introduction", contains("== leasehold demo"))
	path := regexp.MustCompile(`\((/\S+locks\.db)\)`).FindStringSubmatch(intro.text)
	if path == nil {
		t.Fatalf("the introduction names no file: %q", intro.text)
	}
	if _, err := os.Stat(path[1]); !os.IsNotExist(err) {
		t.Errorf("%s is still there after the demo (stat: %v)", path[1], err)
	}

	// (1) One instance runs the job, the others skip.
	d.next("step (1)", contains("== (1)"))
	first := d.next("the first lease", contains(msgLeaseTaken))
	if first.instance == "" || first.token <= 0 {
		t.Fatalf("lease line without instance or token: %q", first.text)
	}
	d.next("a report by the first owner", contains("resource: accepted report #1 from "+first.instance))
	if debug {
		d.next("another instance skipping", func(l demoLine) bool {
			return strings.Contains(l.text, msgTickSkipped) && strings.Contains(l.text, `reason="it runs on another instance"`) && l.instance != first.instance
		})
	}
	d.next("the others skipping", contains(first.instance+" owns the job's lease and runs every tick; the other instances skip theirs"))

	// (2) The owner freezes; another instance takes over with a greater token.
	d.next("step (2)", contains("== (2) "+first.instance+" freezes"))
	second := d.next("the takeover", contains(msgLeaseTaken))
	if second.instance == first.instance || second.token <= first.token {
		t.Fatalf("takeover by %s with token %d, want another instance than %s and a token above %d", second.instance, second.token, first.instance, first.token)
	}

	// (3) The frozen owner resumes: its lease is lost, its late write refused.
	d.next("step (3)", contains("== (3) "+first.instance+" resumes"))
	lost := d.next("the loss", contains(msgLockLost))
	if lost.instance != first.instance || lost.token != first.token {
		t.Fatalf("lock lost by %s (token %d), want %s (token %d)", lost.instance, lost.token, first.instance, first.token)
	}
	d.next("the refused late write", contains("resource: refused the write of "+first.instance+" with fencing token "+strconv.FormatInt(first.token, 10)+", as intended"))
	refusal := d.next("the run's end, refused as intended", contains(`level=INFO msg="demo: the run's late write was refused, as intended"`))
	if refusal.instance != first.instance {
		t.Fatalf("refusal logged by %s, want %s", refusal.instance, first.instance)
	}

	// (4) A clean shutdown hands the lease over at once.
	leaving := d.next("step (4)", contains("== (4) "))
	if !strings.Contains(leaving.text, "== (4) "+second.instance+" shuts down") {
		t.Fatalf("step (4) = %q, want %s, the owner, to shut down", leaving.text, second.instance)
	}
	handed := d.next("the hand-back", contains(msgHandedBack))
	if handed.instance != second.instance {
		t.Fatalf("lease handed back by %s, want %s", handed.instance, second.instance)
	}
	third := d.next("the next owner", contains(msgLeaseTaken))
	if third.instance == second.instance || third.token <= second.token {
		t.Fatalf("after the shutdown, lease taken by %s with token %d; want another instance than %s, token above %d", third.instance, third.token, second.instance, second.token)
	}
	d.next("a report by the next owner", contains("from "+third.instance+" (fencing token "+strconv.FormatInt(third.token, 10)+")"))
	d.next("the end", contains("== Done"))
	d.next("where to read on", contains(`the page "The leasehold command" of the leasehold documentation`))
}

// TestDemoInterrupted: an interrupt (a cancelled context) ends the demo
// soon, with an error, and still removes its file.
func TestDemoInterrupted(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	began := time.Now()
	err := Demo(ctx, &buf, slog.LevelInfo)
	if err == nil || !strings.Contains(err.Error(), "interrupted") {
		t.Fatalf("Demo = %v, want an interruption", err)
	}
	if took := time.Since(began); took > 20*time.Second {
		t.Errorf("the interrupted demo took %v to end", took)
	}
	m := regexp.MustCompile(`\((/\S+locks\.db)\)`).FindStringSubmatch(buf.String())
	if m == nil {
		t.Fatalf("no file named in:\n%s", buf.String())
	}
	if _, err := os.Stat(m[1]); !os.IsNotExist(err) {
		t.Errorf("%s is still there (stat: %v)", m[1], err)
	}
}
