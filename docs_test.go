package leasehold_test

// Every ```go block of README.md and docs/*.md compiles: the doc test
// extracts each block, puts it in the context the page marks for it, and
// builds them all, against this workspace, as one scratch module.
//
// A block that is a whole file (it starts with its package clause, after
// comments) needs no marker. Any other block is a fragment, and the line
// before its fence names the context it compiles in:
//
//	<!-- go-context: NAME -->
//
// NAME is a file of testdata/doccontexts, NAME.go: Go source with one
// line "// BLOCK". At column 0 the block is declarations; indented, it is
// statements inside a function, after which each variable the block
// declares is used once (a fragment shows how to get a value, not what
// the reader does with it). The block's own import declarations, if it
// opens with some, are added to the context's; the context's imports that
// the result does not use are dropped. A block of import declarations only
// is checked with go list: each path is a package, named as the block
// names it. docs/tutorial.md is left to examples/shop, whose tests check
// that its blocks are that package's code.

import (
	"bufio"
	"bytes"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/leasehold/leasehold/internal/gocmd"
)

// docBlock is one ```go block of a page.
type docBlock struct {
	file    string // e.g. docs/sql.md
	line    int    // the line of its opening fence
	context string // the marked context, or ""
	text    string
}

var contextMarker = regexp.MustCompile(`^<!-- go-context: ([a-z0-9-]+) -->$`)

// docPages lists README.md and docs/*.md, without the tutorial.
func docPages(t *testing.T) []string {
	t.Helper()
	pages, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	out := []string{"README.md"}
	for _, p := range pages {
		if p != filepath.Join("docs", "tutorial.md") {
			out = append(out, p)
		}
	}
	return out
}

// goBlocks returns the ```go blocks of a page, with their markers.
func goBlocks(t *testing.T, page string) []docBlock {
	t.Helper()
	data, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	var (
		blocks []docBlock
		cur    *docBlock
		prev   string
		fence  bool
	)
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		switch {
		case cur != nil && trimmed == "```":
			blocks = append(blocks, *cur)
			cur = nil
		case cur != nil:
			cur.text += line + "\n"
		case !fence && trimmed == "```go":
			cur = &docBlock{file: page, line: n}
			if m := contextMarker.FindStringSubmatch(strings.TrimSpace(prev)); m != nil {
				cur.context = m[1]
			}
		case strings.HasPrefix(trimmed, "```"):
			fence = !fence // another language's block: skip its body
		}
		prev = line
	}
	if cur != nil {
		t.Errorf("%s:%d: the ```go block is not closed", page, cur.line)
	}
	return blocks
}

// isWholeFile reports whether a block starts with a package clause.
func isWholeFile(src string) bool {
	f, err := parser.ParseFile(token.NewFileSet(), "", src, parser.PackageClauseOnly)
	return err == nil && f.Name != nil
}

// splitImports returns the import declarations a block opens with, and
// the rest.
func splitImports(src string) (imports []*ast.ImportSpec, rest string) {
	lines := strings.SplitAfter(src, "\n")
	i := 0
	for i < len(lines) {
		l := strings.TrimSpace(lines[i])
		switch {
		case l == "" || strings.HasPrefix(l, "//"):
			i++
			continue
		case l == "import (":
			j := i
			for j < len(lines) && strings.TrimSpace(lines[j]) != ")" {
				j++
			}
			i = j + 1
			continue
		case strings.HasPrefix(l, "import "):
			i++
			continue
		}
		break
	}
	head := strings.Join(lines[:i], "")
	f, err := parser.ParseFile(token.NewFileSet(), "", "package p\n"+head, parser.ImportsOnly)
	if err != nil {
		return nil, src
	}
	return f.Imports, strings.Join(lines[i:], "")
}

// importName is the name a file uses for an import: its alias, or the
// package's name as guessed from its path (the last element that is not a
// major version). Contexts alias every import whose name differs.
func importName(s *ast.ImportSpec) string {
	if s.Name != nil {
		return s.Name.Name
	}
	p, _ := strconv.Unquote(s.Path.Value)
	base := path.Base(p)
	if regexp.MustCompile(`^v[0-9]+$`).MatchString(base) {
		base = path.Base(path.Dir(p))
	}
	return strings.TrimPrefix(base, "go-")
}

// declaredNames returns the variables that top-level statements of a
// function body declare.
func declaredNames(body string) []string {
	f, err := parser.ParseFile(token.NewFileSet(), "", "package p\nfunc _() {\n"+body+"\n}", 0)
	if err != nil {
		return nil // the build reports it
	}
	var names []string
	add := func(id *ast.Ident) {
		if id.Name != "_" && !slices.Contains(names, id.Name) {
			names = append(names, id.Name)
		}
	}
	for _, st := range f.Decls[0].(*ast.FuncDecl).Body.List {
		switch st := st.(type) {
		case *ast.AssignStmt:
			if st.Tok == token.DEFINE {
				for _, e := range st.Lhs {
					if id, ok := e.(*ast.Ident); ok {
						add(id)
					}
				}
			}
		case *ast.DeclStmt:
			if g, ok := st.Decl.(*ast.GenDecl); ok && g.Tok == token.VAR {
				for _, s := range g.Specs {
					for _, id := range s.(*ast.ValueSpec).Names {
						add(id)
					}
				}
			}
		}
	}
	return names
}

// inContext returns the Go file that holds a fragment in its context.
func inContext(b docBlock) (string, error) {
	ctx, err := os.ReadFile(filepath.Join("testdata", "doccontexts", b.context+".go"))
	if err != nil {
		return "", fmt.Errorf("unknown context %q: %v", b.context, err)
	}
	imports, rest := splitImports(b.text)
	var out strings.Builder
	placed := false
	for line := range strings.Lines(string(ctx)) {
		trimmed := strings.TrimSpace(line)
		if trimmed != "// BLOCK" {
			out.WriteString(line)
			if trimmed == "import (" {
				for _, s := range imports {
					if s.Name != nil {
						out.WriteString(s.Name.Name + " ")
					}
					out.WriteString(s.Path.Value + "\n")
				}
			}
			continue
		}
		placed = true
		indent := line[:len(line)-len(strings.TrimLeft(line, " \t"))]
		if indent == "" {
			out.WriteString(rest)
			continue
		}
		for l := range strings.Lines(rest) {
			out.WriteString(indent + l)
		}
		out.WriteString("\n")
		for _, name := range declaredNames(rest) {
			out.WriteString(indent + "_ = " + name + "\n")
		}
	}
	if !placed {
		return "", fmt.Errorf("context %q has no // BLOCK line", b.context)
	}
	return dropUnusedImports(out.String(), imports)
}

// dropUnusedImports removes the imports of a context that src does not
// use; the block's own (keep) stay, so that a wrong one is reported.
func dropUnusedImports(src string, keep []*ast.ImportSpec) (string, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "", src, parser.ParseComments)
	if err != nil {
		return src, nil // the build reports it, at its line
	}
	used := map[string]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok {
			if id, ok := sel.X.(*ast.Ident); ok {
				used[id.Name] = true
			}
		}
		return true
	})
	kept := map[string]bool{}
	for _, s := range keep {
		kept[s.Path.Value] = true
	}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.IMPORT {
			continue
		}
		specs := g.Specs[:0]
		seen := map[string]bool{}
		for _, s := range g.Specs {
			s := s.(*ast.ImportSpec)
			if seen[s.Path.Value] { // the context's, after the block's own
				continue
			}
			seen[s.Path.Value] = true
			if n := importName(s); kept[s.Path.Value] || n == "_" || n == "." || used[n] {
				specs = append(specs, s)
			}
		}
		g.Specs = specs
	}
	var buf bytes.Buffer
	if err := format.Node(&buf, fset, f); err != nil {
		return "", err
	}
	return buf.String(), nil
}

// scratchWorkspace makes a module in a temporary directory, in a
// workspace of its own with every module of this one's go.work, and
// returns the module's directory.
func scratchWorkspace(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	work, err := os.ReadFile("go.work")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var ws strings.Builder
	ws.WriteString("go 1.26.0\n\nuse (\n\t./scratch\n")
	inUse := false
	for line := range strings.Lines(string(work)) {
		l := strings.TrimSpace(line)
		switch {
		case l == "use (":
			inUse = true
		case inUse && l == ")":
			inUse = false
		case inUse && l != "":
			ws.WriteString("\t" + filepath.Join(root, l) + "\n")
		}
	}
	// The packages a page imports as the reader's own.
	ws.WriteString("\t" + filepath.Join(root, "testdata", "docstubs", "redisstore") + "\n")
	ws.WriteString(")\n")
	if err := os.WriteFile(filepath.Join(dir, "go.work"), []byte(ws.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if sum, err := os.ReadFile("go.work.sum"); err == nil {
		if err := os.WriteFile(filepath.Join(dir, "go.work.sum"), sum, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mod := filepath.Join(dir, "scratch")
	if err := os.MkdirAll(mod, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(mod, "go.mod"), []byte("module leasehold.test/scratch\n\ngo 1.26.0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return mod
}

// goIn runs the go command in dir, in its workspace.
func goIn(dir string, args ...string) (string, error) {
	cmd := exec.Command(gocmd.Path(), args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK="+filepath.Join(filepath.Dir(dir), "go.work"), "GOFLAGS=-mod=readonly")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestDocsGoBlocksCompile builds every ```go block of README.md and
// docs/*.md.
func TestDocsGoBlocksCompile(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go command")
	}
	mod := scratchWorkspace(t)
	where := map[string]docBlock{} // package directory -> block
	var imports []docBlock
	total := 0
	for _, page := range docPages(t) {
		for _, b := range goBlocks(t, page) {
			total++
			var src string
			switch {
			case b.context != "":
				var err error
				if src, err = inContext(b); err != nil {
					t.Errorf("%s:%d: %v", b.file, b.line, err)
					continue
				}
			case isWholeFile(b.text):
				src = b.text
			default:
				if specs, rest := splitImports(b.text); len(specs) > 0 && strings.TrimSpace(rest) == "" {
					imports = append(imports, b)
					continue
				}
				t.Errorf("%s:%d: a fragment with no <!-- go-context: NAME --> marker on the line before its fence", b.file, b.line)
				continue
			}
			name := fmt.Sprintf("b%03d", total)
			if err := os.MkdirAll(filepath.Join(mod, name), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(mod, name, "block.go"), []byte(src), 0o644); err != nil {
				t.Fatal(err)
			}
			where[name] = b
		}
	}
	if total < 40 {
		t.Fatalf("found %d ```go blocks; the fence parser must be broken", total)
	}

	out, err := goIn(mod, append(append([]string{"build"}, gocmd.BuildFlags()...), "./...")...)
	if err != nil {
		// Name the page and line of each failing block.
		for dir, b := range where {
			if strings.Contains(out, "./"+dir+"/") || strings.Contains(out, "/"+dir+"\n") {
				src, _ := os.ReadFile(filepath.Join(mod, dir, "block.go"))
				t.Errorf("%s:%d: the block does not compile (as %s/block.go):\n%s", b.file, b.line, dir, numbered(string(src)))
			}
		}
		t.Errorf("go build: %v\n%s", err, out)
	}

	for _, b := range imports {
		specs, _ := splitImports(b.text)
		for _, s := range specs {
			p, _ := strconv.Unquote(s.Path.Value)
			out, err := goIn(mod, "list", "-f", "{{.Name}}", p)
			if err != nil {
				t.Errorf("%s:%d: import %s: %v\n%s", b.file, b.line, p, err, out)
				continue
			}
			if got := strings.TrimSpace(out); got != importName(s) {
				t.Errorf("%s:%d: import %s names it %s; the package is %s", b.file, b.line, p, importName(s), got)
			}
		}
	}
}

// numbered returns src with line numbers, for a build error's line.
func numbered(src string) string {
	var b strings.Builder
	n := 0
	for l := range strings.Lines(src) {
		n++
		fmt.Fprintf(&b, "%4d  %s", n, l)
	}
	return b.String()
}
