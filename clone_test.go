package leasehold_test

// The README's recipe for using leasehold from a clone, tested as a user
// runs it: in a scratch module outside the repository.

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/leasehold/leasehold/internal/gocmd"
)

// scratchMain is a user's program: README's guarded job, cut down to one
// run on the embedded SQLite store.
const scratchMain = `package main

import (
	"context"
	"fmt"
	"log"

	"github.com/leasehold/leasehold/core"
	sqlitestore "github.com/leasehold/leasehold/drivers/sqlite"
)

func main() {
	store, err := sqlitestore.Open("locks.db")
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	locks, err := core.New(store)
	if err != nil {
		log.Fatal(err)
	}
	defer locks.Close(context.Background())
	err = locks.WithLock(context.Background(), "scratch", func(ctx context.Context) error {
		fmt.Println("token", core.LockFromContext(ctx).Token())
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
}
`

// testOnly matches the modules that only leasehold's own tests need (test
// servers, containers, Ginkgo, the kit, the PostgreSQL driver the SQL
// driver's tests use): the go.sum of a program on core and drivers/sqlite
// must list none of them. (It does list the test dependencies of
// third-party modules such as modernc.org/sqlite, which go mod tidy keeps.)
var testOnly = regexp.MustCompile(`testcontainers|ginkgo|gomega|docker|moby|opentelemetry|jackc/pgx|leasehold/conformance|leasehold/internal`)

// TestUseFromAClone runs the README's recipe in a scratch module outside
// the repository, with $HOME/src/leasehold pointing at this clone, both
// ways a reader meets it: in a new module with no code yet (the program is
// written after the recipe) and in a module whose program already imports
// leasehold. Either way the program, on core and drivers/sqlite, builds
// and runs without another go command, and after go mod tidy the module's
// go.sum lists only what the program needs at run time. A third scratch
// module runs the conformance kit from go test, and its go.sum lists no
// Ginkgo or Gomega.
func TestUseFromAClone(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go get and go mod tidy, which may fetch third-party modules")
	}
	recipe := readmeRecipe(t)
	clone, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, "src"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(clone, filepath.Join(home, "src", "leasehold")); err != nil {
		t.Fatal(err)
	}
	env := scratchEnv(t, home)
	writeMain := func(t *testing.T, dir string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(scratchMain), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name       string
		codeBefore bool
	}{
		{"empty module", false},
		{"module with code", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			run(t, dir, env, gocmd.Path(), "mod", "init", "example.com/scratch")
			if tc.codeBefore {
				writeMain(t, dir)
			}
			run(t, dir, env, "sh", "-e", "-c", recipe)
			if !tc.codeBefore {
				mod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
				if err != nil {
					t.Fatal(err)
				}
				for _, m := range []string{"core", "drivers/sql", "drivers/sqlite"} {
					if !strings.Contains(string(mod), "github.com/leasehold/leasehold/"+m+" v0.0.0") {
						t.Errorf("after the recipe, go.mod does not require leasehold's %s:\n%s", m, mod)
					}
				}
				writeMain(t, dir)
			}
			// With the test binary's race flag, so that the build shares the
			// cache of the test run's (modernc.org/sqlite is slow to compile).
			if out := run(t, dir, env, gocmd.Path(), append(append([]string{"run"}, gocmd.BuildFlags()...), ".")...); out != "token 1\n" {
				t.Errorf("the scratch program printed %q, want %q", out, "token 1\n")
			}

			run(t, dir, env, gocmd.Path(), "mod", "tidy")
			sum, err := os.ReadFile(filepath.Join(dir, "go.sum"))
			if err != nil {
				t.Fatal(err)
			}
			for line := range strings.Lines(string(sum)) {
				if f := strings.Fields(line); len(f) == 3 && testOnly.MatchString(f[0]) {
					t.Errorf("go.sum lists %s %s, which only leasehold's own tests need", f[0], f[1])
				}
			}
			if t.Failed() {
				t.Logf("go.sum:\n%s", sum)
			}
		})
	}
	t.Run("conformance kit without Ginkgo", func(t *testing.T) { kitWithoutGinkgo(t, recipe, env) })
}

// scratchKitTest is a store author's test that runs the conformance kit
// with the standard testing package only.
const scratchKitTest = `package scratch

import (
	"testing"
	"time"

	"github.com/leasehold/leasehold/conformance"
	"github.com/leasehold/leasehold/core"
)

func TestConformance(t *testing.T) {
	clock := core.NewManualClock(time.Unix(1_700_000_000, 0))
	store := core.NewMemoryStore(core.WithMemoryClock(clock))
	conformance.Run(t, func(testing.TB) core.LockStore { return store }, conformance.Options{
		AdvanceTime: clock.Advance,
		ResetTokens: store.ResetTokens,
	})
}
`

// kitWithoutGinkgo runs the README's recipe for the conformance kit's row
// (core and conformance) in a scratch module whose test calls
// conformance.Run, runs that test, and checks that after go mod tidy the
// module's go.sum lists neither Ginkgo nor Gomega: those reach only a user
// of conformance/ginkgokit.
func kitWithoutGinkgo(t *testing.T, recipe string, env []string) {
	t.Helper()
	mods := regexp.MustCompile(`(?m)^mods="[^"]*"`)
	if !mods.MatchString(recipe) {
		t.Fatal(`README's recipe has no mods="..." line to set the kit's modules on`)
	}
	recipe = mods.ReplaceAllLiteralString(recipe, `mods="core conformance"`)
	dir := t.TempDir()
	run(t, dir, env, gocmd.Path(), "mod", "init", "example.com/scratch")
	if err := os.WriteFile(filepath.Join(dir, "kit_test.go"), []byte(scratchKitTest), 0o644); err != nil {
		t.Fatal(err)
	}
	run(t, dir, env, "sh", "-e", "-c", recipe)
	run(t, dir, env, gocmd.Path(), "mod", "tidy")
	run(t, dir, env, gocmd.Path(), append(append([]string{"test", "-count=1"}, gocmd.BuildFlags()...), ".")...)
	sum, err := os.ReadFile(filepath.Join(dir, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(sum), "github.com/anishathalye/porcupine ") {
		// The kit's own dependency must be there, or the check below
		// proves nothing about a go.sum that tidy filled.
		t.Errorf("go.sum does not list the kit's dependency porcupine:\n%s", sum)
	}
	for line := range strings.Lines(string(sum)) {
		if f := strings.Fields(line); len(f) == 3 && (strings.HasPrefix(f[0], "github.com/onsi/ginkgo") || strings.HasPrefix(f[0], "github.com/onsi/gomega")) {
			t.Errorf("go.sum of a module that only calls conformance.Run lists %s %s", f[0], f[1])
		}
	}
}

// readmeRecipe returns the shell block between the recipe markers of the
// README.
func readmeRecipe(t *testing.T) string {
	t.Helper()
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)<!-- recipe:begin[^>]*-->\n```sh\n(.*?)```\n<!-- recipe:end -->").FindSubmatch(readme)
	if m == nil {
		t.Fatal("README.md has no ```sh block between the recipe markers")
	}
	return string(m[1])
}

// scratchEnv is the environment of the scratch module's go commands: home
// as $HOME, this process's Go caches (which live under the real $HOME by
// default), and no workspace or flags of the repository's.
func scratchEnv(t *testing.T, home string) []string {
	t.Helper()
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		for _, k := range []string{"HOME=", "GOWORK=", "GOFLAGS=", "GOPATH=", "GOMODCACHE=", "GOCACHE="} {
			if strings.HasPrefix(kv, k) {
				return true
			}
		}
		return false
	})
	for _, k := range []string{"GOPATH", "GOMODCACHE", "GOCACHE"} {
		v := strings.TrimSpace(run(t, ".", os.Environ(), gocmd.Path(), "env", k))
		env = append(env, k+"="+v)
	}
	return append(env, "HOME="+home, "GOWORK=off", "GOFLAGS=")
}

// run runs a command in dir and returns its standard output, failing the
// test if it fails.
func run(t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir, cmd.Env = dir, env
	out, err := cmd.Output()
	if err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			t.Fatalf("%s %s: %v\n%s%s", name, strings.Join(args, " "), err, out, exit.Stderr)
		}
		t.Fatalf("%s %s: %v", name, strings.Join(args, " "), err)
	}
	return string(out)
}
