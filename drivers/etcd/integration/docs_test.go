package integration

import (
	"os"
	"strings"
	"testing"
)

// TestDocsShowTheExample keeps the example of docs/etcd.md in step with
// the driver's example_test.go: the page's Go block must be a part of it.
func TestDocsShowTheExample(t *testing.T) {
	doc, err := os.ReadFile("../../../docs/etcd.md")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("../example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(doc), "```go\n")
	if !ok {
		t.Fatal("docs/etcd.md has no Go block")
	}
	block, _, _ := strings.Cut(rest, "```")
	if !strings.Contains(string(src), block) {
		t.Errorf("the Go block of docs/etcd.md is not a part of drivers/etcd/example_test.go; copy it again:\n%s", block)
	}
}
