package shop

import (
	"bufio"
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// tutorial is the document whose code this package holds.
const tutorial = "../../docs/tutorial.md"

// TestTutorialShowsThisPackagesCode checks that every ```go and ```sql block
// of docs/tutorial.md appears verbatim in this package's .go files (tests
// and cmd/shopd included). The tutorial shows only code that compiles and
// is tested here, and cannot drift from it: change the code, and the
// tutorial must follow. A block may be shown with its common indentation
// removed, so that a snippet from inside a function reads flush left.
func TestTutorialShowsThisPackagesCode(t *testing.T) {
	doc, err := os.ReadFile(tutorial)
	if err != nil {
		t.Fatal(err)
	}
	sources := readSources(t, ".")
	blocks := codeBlocks(doc, "go", "sql")
	if len(blocks) < 10 {
		t.Fatalf("%s has %d go and sql code blocks; the fence parser must be broken", tutorial, len(blocks))
	}
	for _, b := range blocks {
		if !containsIndented(sources, b.text) {
			t.Errorf("%s:%d: this ```%s block is not in examples/shop's sources:\n%s", tutorial, b.line, b.lang, b.text)
		}
	}
}

type codeBlock struct {
	lang string
	line int // of the opening fence
	text string
}

// codeBlocks returns the fenced code blocks of doc in the given languages,
// each without its fences and surrounding blank lines.
func codeBlocks(doc []byte, langs ...string) []codeBlock {
	var (
		blocks []codeBlock
		cur    *codeBlock
		body   []string
		lineNo int
	)
	sc := bufio.NewScanner(bytes.NewReader(doc))
	for sc.Scan() {
		lineNo++
		line := sc.Text()
		fence := strings.TrimSpace(line)
		switch {
		case cur == nil && strings.HasPrefix(fence, "```"):
			cur = &codeBlock{lang: strings.TrimSpace(strings.TrimPrefix(fence, "```")), line: lineNo}
			body = body[:0]
		case cur != nil && fence == "```":
			for _, l := range langs {
				if cur.lang == l {
					cur.text = strings.Trim(strings.Join(body, "\n"), "\n")
					blocks = append(blocks, *cur)
				}
			}
			cur = nil
		case cur != nil:
			body = append(body, line)
		}
	}
	return blocks
}

// readSources returns the text of every .go file under dir.
func readSources(t *testing.T, dir string) string {
	t.Helper()
	var all strings.Builder
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") {
			return err
		}
		b, err := os.ReadFile(path)
		all.Write(b)
		all.WriteString("\n")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return all.String()
}

// containsIndented reports whether sources contain block, as it is or with
// each of its non-empty lines indented by up to four more tabs.
func containsIndented(sources, block string) bool {
	lines := strings.Split(block, "\n")
	for depth := 0; depth <= 4; depth++ {
		indented := make([]string, len(lines))
		for i, l := range lines {
			if l != "" {
				l = strings.Repeat("\t", depth) + l
			}
			indented[i] = l
		}
		if strings.Contains(sources, strings.Join(indented, "\n")) {
			return true
		}
	}
	return false
}
