package shop

import (
	"bufio"
	"bytes"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/scanner"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/leasehold/leasehold/internal/gocmd"
)

// tutorial is the document whose code this package holds.
const tutorial = "../../docs/tutorial.md"

// TestTutorialShowsThisPackagesCode checks that every ```go and ```sql block
// of docs/tutorial.md appears verbatim in this package's .go files (tests
// and cmd/shopd included), and that the page names a file that holds it, by
// its path under examples/shop, before the block: a reader who builds along
// knows where each piece goes. The tutorial shows only code that compiles
// and is tested here, and cannot drift from it: change the code, and the
// tutorial must follow. A block may be shown with its common indentation
// removed, so that a snippet from inside a function reads flush left.
func TestTutorialShowsThisPackagesCode(t *testing.T) {
	doc, sources, named := readTutorial(t)
	blocks := codeBlocks(doc, "go", "sql")
	if len(blocks) < 10 {
		t.Fatalf("%s has %d go and sql code blocks; the fence parser must be broken", tutorial, len(blocks))
	}
	for _, b := range blocks {
		in := filesWith(sources, b)
		if len(in) == 0 {
			t.Errorf("%s:%d: this ```%s block is not in examples/shop's sources:\n%s", tutorial, b.line, b.lang, b.text)
			continue
		}
		if !slices.ContainsFunc(in, func(path string) bool { line, ok := named[path]; return ok && line < b.line }) {
			t.Errorf("%s:%d: this ```%s block is in %s, which the page does not name (examples/shop/…) before it", tutorial, b.line, b.lang, strings.Join(in, " or "))
		}
	}
}

// TestTutorialBuildsFromTheFilesItNames builds this package and its command
// from the files the tutorial names and nothing else (an overlay deletes the
// others), as a reader who copies them would, and runs the first section's
// test with only the files named up to the end of that section: the
// duplicate runs can be seen before anything else is written.
func TestTutorialBuildsFromTheFilesItNames(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go command")
	}
	doc, sources, named := readTutorial(t)
	for path := range named {
		if _, err := os.Stat(path); err != nil {
			t.Errorf("%s names examples/shop/%s: %v", tutorial, path, err)
		}
	}

	all := func(string, int) bool { return true }
	if out, err := goWithOnly(t, sources, named, all, "vet", "./..."); err != nil {
		t.Errorf("go vet of examples/shop with only the files %s names: %v\n%s", tutorial, err, out)
	}

	const first = "TestWithoutLocksEveryInstanceRunsEveryJob"
	end := sectionEnd(doc, "func "+first+"(")
	if end < 0 {
		t.Fatalf("%s shows no %s", tutorial, first)
	}
	upTo := func(_ string, line int) bool { return line < end }
	out, err := goWithOnly(t, sources, named, upTo, "test", "-count=1", "-v", "-run", "^"+first+"$", ".")
	if err != nil || !strings.Contains(out, "--- PASS: "+first) {
		t.Errorf("%s with only the files %s names up to its section: %v\n%s", first, tutorial, err, out)
	}
}

// filesWith returns the files whose source holds block b, in order.
func filesWith(sources map[string]string, b codeBlock) []string {
	var in []string
	for path, text := range sources {
		if containsIndented(text, b.text) {
			in = append(in, path)
		}
	}
	slices.Sort(in)
	return in
}

// goWithOnly runs the go command in this directory with an overlay that
// deletes every source file that is not named, or whose naming keep refuses.
func goWithOnly(t *testing.T, sources map[string]string, named map[string]int, keep func(path string, line int) bool, args ...string) (string, error) {
	t.Helper()
	replace := map[string]string{}
	for path := range sources {
		if line, ok := named[path]; !ok || !keep(path, line) {
			abs, err := filepath.Abs(path)
			if err != nil {
				t.Fatal(err)
			}
			replace[abs] = "" // deleted
		}
	}
	overlay, err := json.Marshal(map[string]any{"Replace": replace})
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "overlay.json")
	if err := os.WriteFile(file, overlay, 0o644); err != nil {
		t.Fatal(err)
	}
	flags := append([]string{args[0], "-overlay", file}, gocmd.BuildFlags()...)
	cmd := exec.Command(gocmd.Path(), append(flags, args[1:]...)...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// readTutorial returns the tutorial, this package's sources by path, and
// the files the tutorial names with the line that names each first.
func readTutorial(t *testing.T) (doc []byte, sources map[string]string, named map[string]int) {
	t.Helper()
	doc, err := os.ReadFile(tutorial)
	if err != nil {
		t.Fatal(err)
	}
	return doc, readSources(t), namedFiles(doc)
}

// namedFiles returns the files of this package the document names, by their
// path under examples/shop, each with the line that names it first.
func namedFiles(doc []byte) map[string]int {
	named := map[string]int{}
	for i, line := range strings.Split(string(doc), "\n") {
		for _, m := range fileName.FindAllStringSubmatch(line, -1) {
			if _, ok := named[m[1]]; !ok {
				named[m[1]] = i + 1
			}
		}
	}
	return named
}

var fileName = regexp.MustCompile(`examples/shop/([A-Za-z0-9_./]+\.go)`)

// sectionEnd returns the line of the first "## " heading after the block
// that contains text, or -1 if no block does.
func sectionEnd(doc []byte, text string) int {
	lines := strings.Split(string(doc), "\n")
	for _, b := range codeBlocks(doc, "go") {
		if !strings.Contains(b.text, text) {
			continue
		}
		for i := b.line; i < len(lines); i++ {
			if strings.HasPrefix(lines[i], "## ") {
				return i + 1
			}
		}
		return len(lines) + 1
	}
	return -1
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

// readSources returns the text of every .go file of this package and its
// command, by path under examples/shop; nested modules (integration/) are
// not part of them.
func readSources(t *testing.T) map[string]string {
	t.Helper()
	sources := map[string]string{}
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != "." && fileExists(filepath.Join(path, "go.mod")) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		b, err := os.ReadFile(path)
		sources[filepath.ToSlash(path)] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return sources
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

// TestTutorialNamesEveryIdentifierItUses checks that every name a ```go
// block uses that this package or its command declares (a function, type,
// variable, constant, method or field) is declared in a file the page names
// before the block: nothing the reader meets is left unexplained.
func TestTutorialNamesEveryIdentifierItUses(t *testing.T) {
	doc, sources, named := readTutorial(t)
	decls := declarations(t, sources)
	for _, b := range codeBlocks(doc, "go") {
		in := filesWith(sources, b)
		if len(in) == 0 {
			continue // TestTutorialShowsThisPackagesCode reports it
		}
		from := in[0]
		for _, use := range uses(b.text) {
			var where []string
			for _, d := range decls[use.name] {
				if d.selector == use.selector && d.visibleFrom(from, use.qualifier) {
					where = append(where, d.path)
				}
			}
			if len(where) > 0 && !slices.ContainsFunc(where, func(p string) bool { line, ok := named[p]; return ok && line < b.line }) {
				t.Errorf("%s:%d: the block uses %s, declared in %s, which the page does not name before it", tutorial, b.line, use.name, strings.Join(where, " or "))
			}
		}
	}
}

// decl is where a name is declared: at top level, or as a method or field
// (selector).
type decl struct {
	path     string
	pkg      string
	test     bool
	selector bool
}

// visibleFrom reports whether code in file from can use d: a selector from
// anywhere, a top-level name from its own package (test files only from
// tests), or through the package's name (shop.X).
func (d decl) visibleFrom(from, qualifier string) bool {
	if d.selector {
		return true
	}
	if qualifier != "" {
		return qualifier == d.pkg
	}
	fromPkg := "shop"
	if strings.HasPrefix(from, "cmd/") {
		fromPkg = "main"
	}
	return d.pkg == fromPkg && (!d.test || strings.HasSuffix(from, "_test.go"))
}

// declarations parses sources and returns, by name, where each is declared.
func declarations(t *testing.T, sources map[string]string) map[string][]decl {
	t.Helper()
	out := map[string][]decl{}
	fset := token.NewFileSet()
	for path, text := range sources {
		f, err := parser.ParseFile(fset, path, text, 0)
		if err != nil {
			t.Fatal(err)
		}
		add := func(name string, selector bool) {
			out[name] = append(out[name], decl{path: path, pkg: f.Name.Name, test: strings.HasSuffix(path, "_test.go"), selector: selector})
		}
		fields := func(list *ast.FieldList) {
			for _, fld := range list.List {
				for _, n := range fld.Names {
					add(n.Name, true)
				}
			}
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				add(d.Name.Name, d.Recv != nil)
			case *ast.GenDecl:
				for _, spec := range d.Specs {
					switch spec := spec.(type) {
					case *ast.ValueSpec:
						for _, n := range spec.Names {
							add(n.Name, false)
						}
					case *ast.TypeSpec:
						add(spec.Name.Name, false)
						switch typ := spec.Type.(type) {
						case *ast.StructType:
							fields(typ.Fields)
						case *ast.InterfaceType:
							fields(typ.Methods)
						}
					}
				}
			}
		}
	}
	return out
}

// use is a name a block uses: after a dot (selector), possibly after a
// package's name (qualifier).
type use struct {
	name, qualifier string
	selector        bool
}

// uses returns the names code uses, leaving out those it defines itself
// with := (a local variable that happens to share a declared name).
func uses(code string) []use {
	var (
		sc      scanner.Scanner
		out     []use
		local   = map[string]bool{}
		pending []string // identifiers since the statement began
		prev    token.Token
		prevLit string
		before  string // the identifier before the dot
	)
	fset := token.NewFileSet()
	sc.Init(fset.AddFile("block", -1, len(code)), []byte(code), nil, 0)
	for {
		_, tok, lit := sc.Scan()
		if tok == token.EOF {
			break
		}
		switch tok {
		case token.IDENT:
			u := use{name: lit}
			if prev == token.PERIOD {
				u.selector = before != "shop"
				if before == "shop" {
					u.qualifier = "shop"
				}
			}
			out = append(out, u)
			pending = append(pending, lit)
		case token.DEFINE:
			for _, n := range pending {
				local[n] = true
			}
		case token.SEMICOLON, token.LBRACE, token.RBRACE:
			pending = pending[:0]
		case token.PERIOD:
			before = prevLit
		}
		prev, prevLit = tok, lit
	}
	return slices.DeleteFunc(out, func(u use) bool { return !u.selector && u.qualifier == "" && local[u.name] })
}
