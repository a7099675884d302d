package testserver

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/ginkgo/v2"
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
