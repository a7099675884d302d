package main

import (
	"bytes"
	"strings"
	"testing"
)

// A go test -json stream: a passing test, a test skipped for want of a
// server, one skipped for another reason, a failing test with a failing
// subtest, and a Ginkgo suite that skipped specs without a server.
const stream = `{"Action":"run","Package":"p","Test":"TestA"}
{"Action":"pass","Package":"p","Test":"TestA","Elapsed":0.1}
{"Action":"run","Package":"p","Test":"TestPG"}
{"Action":"output","Package":"p","Test":"TestPG","Output":"    pg_test.go:9: testserver: no PostgreSQL: LEASEHOLD_TEST_POSTGRES is not set\n"}
{"Action":"skip","Package":"p","Test":"TestPG"}
{"Action":"run","Package":"p","Test":"TestShort"}
{"Action":"output","Package":"p","Test":"TestShort","Output":"    x_test.go:3: short mode\n"}
{"Action":"skip","Package":"p","Test":"TestShort"}
{"Action":"run","Package":"p","Test":"TestB"}
{"Action":"output","Package":"p","Test":"TestB/sub","Output":"    b_test.go:7: got 1, want 2\n"}
{"Action":"fail","Package":"p","Test":"TestB/sub"}
{"Action":"output","Package":"p","Test":"TestB","Output":"--- FAIL: TestB (0.00s)\n"}
{"Action":"fail","Package":"p","Test":"TestB"}
{"Action":"fail","Package":"p","Elapsed":1.5}
{"Action":"run","Package":"q","Test":"TestSuite"}
{"Action":"output","Package":"q","Test":"TestSuite","Output":"testserver: suite q: 39 specs, 3 ran, 36 skipped without a server\n"}
{"Action":"pass","Package":"q","Test":"TestSuite"}
{"Action":"pass","Package":"q","Elapsed":2}
`

func TestTally(t *testing.T) {
	tl := &tally{output: map[string][]string{}, serverSkip: map[string]bool{}}
	var out bytes.Buffer
	tl.read(strings.NewReader(stream), &out)
	if tl.passed != 2 || tl.failed != 1 || tl.skipped != 2 || tl.serverSkipped != 1 {
		t.Errorf("passed, failed, skipped, server-skipped = %d, %d, %d, %d; want 2, 1, 2, 1",
			tl.passed, tl.failed, tl.skipped, tl.serverSkipped)
	}
	if tl.specs != 39 || tl.specsRan != 3 || tl.specsServerSkipped != 36 {
		t.Errorf("specs = %d, %d ran, %d skipped without a server; want 39, 3, 36", tl.specs, tl.specsRan, tl.specsServerSkipped)
	}
	if !strings.Contains(out.String(), "--- FAIL: TestB (p)") || !strings.Contains(out.String(), "got 1, want 2") || !strings.Contains(out.String(), "FAIL  p") {
		t.Errorf("the output does not name the failing test, its subtest's message and the package:\n%s", out.String())
	}
	tl.summary(&out, 0)
	for _, want := range []string{
		"2 tests passed, 1 failed, 2 skipped",
		"1 tests and 36 Ginkgo specs did NOT run",
		"LEASEHOLD_TEST_POSTGRES=",
		"go run ./internal/testall",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the summary lacks %q:\n%s", want, out.String())
		}
	}
}

func TestGoTestArgs(t *testing.T) {
	for _, c := range []struct {
		user []string
		cpus int
		want string
	}{
		{nil, 2, "test -race -json -timeout=30m -p=4 work"},
		{nil, 0, "test -race -json -timeout=30m -p=2 work"},
		{[]string{"-p=1", "-run", "TestFoo"}, 8, "test -race -json -timeout=30m -p=1 -run TestFoo work"},
		{[]string{"-p", "3", "--timeout=1m"}, 8, "test -race -json -p 3 --timeout=1m work"},
		{[]string{"-parallel=2", "./core/..."}, 1, "test -race -json -timeout=30m -p=2 -parallel=2 ./core/..."},
	} {
		if got := strings.Join(goTestArgs(c.user, c.cpus), " "); got != c.want {
			t.Errorf("goTestArgs(%q, %d) = %q, want %q", c.user, c.cpus, got, c.want)
		}
	}
}
