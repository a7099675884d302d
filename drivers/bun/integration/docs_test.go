package integration

import (
	"os"
	"strings"
	"testing"
)

// TestDocsShowTheExample keeps the example of docs/bun.md in step with
// Example in example_test.go, which runs and checks its output.
func TestDocsShowTheExample(t *testing.T) {
	doc, err := os.ReadFile("../../../docs/bun.md")
	if err != nil {
		t.Fatal(err)
	}
	code, err := os.ReadFile("example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(doc), "## Example\n")
	if !ok {
		t.Fatal("docs/bun.md has no Example section")
	}
	_, rest, ok = strings.Cut(rest, "```go\n")
	block, _, ok2 := strings.Cut(rest, "```\n")
	if !ok || !ok2 {
		t.Fatal("docs/bun.md: no Go block in the Example section")
	}
	if !strings.Contains(string(code), block) {
		t.Errorf("the Example section of docs/bun.md is not a part of example_test.go; copy it again:\n%s", block)
	}
}
