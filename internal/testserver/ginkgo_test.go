package testserver

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/types"
	. "github.com/onsi/gomega"
)

var _ = Describe("RunSuite", Label("self"), func() {
	It("runs the package's specs", func() {
		Expect(1 + 1).To(Equal(2))
	})
})

// TestRunSuite runs this package's one spec through RunSuite and checks the
// JUnit report it writes when LEASEHOLD_JUNIT_DIR is set.
func TestRunSuite(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(EnvJUnitDir, dir)
	RunSuite(t, "testserver self test")
	if t.Skipped() {
		return
	}
	b, err := os.ReadFile(filepath.Join(dir, "testserver_self_test.xml"))
	if err != nil {
		t.Fatalf("no JUnit report: %v", err)
	}
	if !strings.Contains(string(b), "runs the package") {
		t.Fatalf("JUnit report lacks the spec:\n%s", b)
	}
}

// TestSuiteSummary checks the line internal/testall reads: specs skipped
// with SkipPrefix count as skipped without a server, other skips
// (a label filter, Skip in a spec) do not.
func TestSuiteSummary(t *testing.T) {
	spec := func(container string, state types.SpecState, msg string) types.SpecReport {
		return types.SpecReport{ContainerHierarchyTexts: []string{"store", container}, LeafNodeType: types.NodeTypeIt,
			State: state, Failure: types.Failure{Message: msg}}
	}
	r := Report{SpecReports: types.SpecReports{
		spec("sqlite", types.SpecStatePassed, ""),
		spec("sqlite", types.SpecStateFailed, "boom"),
		spec("sqlite", types.SpecStateSkipped, "not on this platform"),
		spec("sqlite", types.SpecStateSkipped, ""), // skipped by a label filter
		// An Ordered container whose BeforeAll skipped: the message goes
		// to its first spec only.
		spec("postgres", types.SpecStateSkipped, SkipPrefix+"no PostgreSQL: LEASEHOLD_TEST_POSTGRES is not set"),
		spec("postgres", types.SpecStateSkipped, "Spec skipped because Skip() was called in BeforeAll"),
		spec("postgres", types.SpecStateSkipped, ""),
		spec("redis", types.SpecStateSkipped, SkipPrefix+"no Redis"),
		{LeafNodeType: types.NodeTypeBeforeSuite, State: types.SpecStatePassed},
	}}
	const want = "testserver: suite s: 8 specs, 2 ran, 4 skipped without a server"
	if got := suiteSummary("s", r); got != want {
		t.Errorf("suiteSummary = %q, want %q", got, want)
	}
}
