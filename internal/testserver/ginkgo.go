package testserver

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/types"
	"github.com/onsi/gomega"
)

// EnvJUnitDir names a directory where [RunSuite] writes each suite's JUnit
// report (<suite name>.xml), for CI to publish.
const EnvJUnitDir = "LEASEHOLD_JUNIT_DIR"

// suiteRan guards RunSpecs, which Ginkgo allows once per process.
var suiteRan atomic.Bool

// RunSuite runs the Ginkgo specs of the calling test package as the suite
// name, from a plain go test function:
//
//	func TestSuite(t *testing.T) { testserver.RunSuite(t, "gormstore") }
//
// Label the specs by server (Label("postgres"), Label("mysql"),
// Label("sqlite"), Label("redis"), Label("redis-cluster")) so that
// `ginkgo --label-filter=postgres` or `go test -ginkgo.label-filter=postgres`
// picks one. With LEASEHOLD_JUNIT_DIR set, the suite writes a JUnit report
// there. Ginkgo runs a suite once per process, so under go test -count=N
// (N > 1) the suite skips and says so; ginkgo --repeat=N repeats it.
func RunSuite(t *testing.T, name string) {
	t.Helper()
	if f := flag.Lookup("test.count"); f != nil && f.Value.String() != "1" {
		t.Skipf("Ginkgo refuses go test -count=%s; run ginkgo --repeat=N to repeat this suite", f.Value)
	}
	if suiteRan.Swap(true) {
		t.Skip("Ginkgo runs a suite once per process; run ginkgo --repeat=N to repeat it")
	}
	gomega.RegisterFailHandler(ginkgo.Fail)
	suite, reporter := ginkgo.GinkgoConfiguration()
	if dir := os.Getenv(EnvJUnitDir); dir != "" && reporter.JUnitReport == "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatalf("testserver: %s: %v", EnvJUnitDir, err)
		}
		file := strings.Map(func(r rune) rune {
			if r == '/' || r == '\\' || r == ' ' {
				return '_'
			}
			return r
		}, name)
		reporter.JUnitReport = filepath.Join(dir, file+".xml")
	}
	ginkgo.ReportAfterSuite("testserver summary", func(r ginkgo.Report) {
		fmt.Printf("\n%s\n", suiteSummary(name, r))
	})
	ginkgo.RunSpecs(t, name, suite, reporter)
}

// suiteSummary is the line RunSuite prints after a suite, which
// internal/testall reads: the suite's specs, how many ran, and how many
// were skipped for want of a server (their message starts with
// SkipPrefix).
//
// In an Ordered container whose BeforeAll skips, Ginkgo gives the message
// to the first spec only and skips the others with "Spec skipped because
// Skip() was called in BeforeAll" (or no message): such a spec, in a
// container where a spec was skipped for want of a server, counts as
// skipped without a server too.
func suiteSummary(name string, r ginkgo.Report) string {
	container := func(s types.SpecReport) string { return strings.Join(s.ContainerHierarchyTexts, "\x00") }
	serverless := map[string]bool{}
	for _, s := range r.SpecReports {
		if s.State.Is(types.SpecStateSkipped) && strings.HasPrefix(s.Failure.Message, SkipPrefix) {
			serverless[container(s)] = true
		}
	}
	specs, ran, noServer := 0, 0, 0
	for _, s := range r.SpecReports {
		if s.LeafNodeType != types.NodeTypeIt {
			continue
		}
		specs++
		switch {
		case s.State.Is(types.SpecStateSkipped) && strings.HasPrefix(s.Failure.Message, SkipPrefix),
			s.State.Is(types.SpecStateSkipped) && serverless[container(s)] &&
				(s.Failure.Message == "" || strings.Contains(s.Failure.Message, "BeforeAll")):
			noServer++
		case s.State.Is(types.SpecStatePassed | types.SpecStateFailureStates):
			ran++
		}
	}
	return fmt.Sprintf("%ssuite %s: %d specs, %d ran, %d skipped without a server", SkipPrefix, name, specs, ran, noServer)
}
