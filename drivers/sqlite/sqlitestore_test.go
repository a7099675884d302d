package sqlitestore

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leasehold/leasehold/core"
	sqlstore "github.com/leasehold/leasehold/drivers/sql"
)

var _ core.LockStore = (*Store)(nil)
var _ core.Lister = (*Store)(nil)

func open(t testing.TB, path string, opts ...sqlstore.Option) *Store {
	t.Helper()
	s, err := Open(path, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestOpenSettings(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"plain.db", "with?query#and%percent.db", "sub dir/x.db"} {
		path := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(path), 0o755)
		s := open(t, path)
		if _, err := os.Stat(path); err != nil {
			t.Fatalf("Open(%q) did not create that file: %v", path, err)
		}
		ctx := context.Background()
		for pragma, want := range map[string]string{"journal_mode": "wal", "busy_timeout": "5000", "synchronous": "2"} {
			var got string
			if err := s.DB().QueryRowContext(ctx, "PRAGMA "+pragma).Scan(&got); err != nil || got != want {
				t.Errorf("PRAGMA %s = %q, %v; want %q", pragma, got, err, want)
			}
		}
		if _, ok, err := s.Acquire(ctx, "k", "o", time.Minute); err != nil || !ok {
			t.Fatal(ok, err)
		}
		if !strings.Contains(s.String(), path) {
			t.Errorf("String() = %q", s.String())
		}
	}
	if _, err := Open(""); !errors.Is(err, core.ErrInvalidArgument) {
		t.Errorf("Open(\"\"): %v; want an error matching core.ErrInvalidArgument", err)
	}
	if _, err := Open(filepath.Join(dir, "x.db"), sqlstore.WithTable("bad name")); err == nil {
		t.Error("a bad table name was accepted")
	}
}

// TestOpenWaitsForAWriter: a file in rollback mode whose write lock another
// connection holds (as a second process sees a new file while the first
// creates the schema in it). Switching the file to WAL fails at once with
// SQLITE_BUSY, without SQLite's busy wait; Open must wait for the writer,
// not fail (it failed so in a soak of leasehold run: exit 125).
func TestOpenWaitsForAWriter(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "new.db")
	other, err := sql.Open("sqlite", "file:"+path+"?_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := other.ExecContext(ctx, "CREATE TABLE other (k TEXT)"); err != nil {
		t.Fatal(err)
	}
	tx, err := other.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO other VALUES ('k')"); err != nil {
		t.Fatal(err)
	}
	// The writer's transaction lasts as long as a slow first migration.
	const hold = 200 * time.Millisecond
	committed := make(chan error, 1)
	go func() {
		time.Sleep(hold)
		committed <- tx.Commit()
	}()
	s, err := Open(path)
	if err != nil {
		t.Fatalf("Open while another connection writes: %v", err)
	}
	defer s.Close()
	if err := <-committed; err != nil {
		t.Fatalf("the other writer's commit: %v", err)
	}
	var mode string
	if err := s.DB().QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil || mode != "wal" {
		t.Fatalf("journal_mode = %q, %v; want wal", mode, err)
	}
	if _, ok, err := s.Acquire(ctx, "k", "o", time.Minute); err != nil || !ok {
		t.Fatalf("Acquire after Open: %v, %v", ok, err)
	}
}

// TestOpenWhileTheWriteLockIsHeld: opening a file whose schema exists
// needs no write. While other processes keep the write lock taken (32 of
// them acquiring in turn starved a new Open's busy wait past BusyTimeout
// under load), Open must succeed without waiting for it, and the store
// must read. The lock here is held from start to end, so a write in Open
// would fail with SQLITE_BUSY after BusyTimeout.
func TestOpenWhileTheWriteLockIsHeld(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "locks.db")
	first := open(t, path)
	if _, ok, err := first.Acquire(ctx, "held", "o", time.Minute); err != nil || !ok {
		t.Fatal(ok, err)
	}
	writer, err := first.DB().Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer writer.Close()
	if _, err := writer.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	defer writer.ExecContext(ctx, "ROLLBACK")

	start := time.Now()
	s, err := Open(path)
	if err != nil {
		t.Fatalf("Open while another connection holds the write lock (after %v): %v", time.Since(start), err)
	}
	defer s.Close()
	locks, err := s.List(ctx, "")
	if err != nil || len(locks) != 1 || locks[0].Key != "held" {
		t.Fatalf("List after Open = %v, %v; want the one lock held", locks, err)
	}
}

// TestOpenCompletesASchema: Open skips the migration only when every object
// of the schema is there; a schema cut short (a process killed between its
// statements) is completed.
func TestOpenCompletesASchema(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "locks.db")
	objects := func(s *Store) (n int) {
		t.Helper()
		if err := s.DB().QueryRowContext(ctx, "SELECT count(*) FROM sqlite_schema WHERE name LIKE 'leasehold_locks%'").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	s := open(t, path)
	want := objects(s)
	if _, err := s.DB().ExecContext(ctx, `DROP TRIGGER "leasehold_locks_token_update"`); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if got := objects(open(t, path)); got != want {
		t.Fatalf("after Open over a schema without its last trigger: %d objects, want %d", got, want)
	}
}

func TestMemoryIsPrivate(t *testing.T) {
	a, b := open(t, ":memory:"), open(t, ":memory:")
	ctx := context.Background()
	for _, s := range []*Store{a, b} {
		if _, ok, err := s.Acquire(ctx, "k", "o", time.Minute); err != nil || !ok {
			t.Fatalf("Acquire = %v, %v: in-memory stores must not share", ok, err)
		}
	}
	if !strings.Contains(a.String(), "this process only") {
		t.Errorf("String() = %q", a.String())
	}
}

func TestNewOverExistingHandle(t *testing.T) {
	path := filepath.Join(t.TempDir(), "shared.db")
	owner := open(t, path, sqlstore.WithTable("mine"))
	s, err := New(owner.DB(), sqlstore.WithTable("mine"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, ok, err := owner.Acquire(ctx, "k", "a", time.Minute); err != nil || !ok {
		t.Fatal(ok, err)
	}
	if _, ok, err := s.Acquire(ctx, "k", "b", time.Minute); err != nil || ok {
		t.Fatalf("second store on one table: Acquire = %v, %v; want held", ok, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := owner.DB().PingContext(ctx); err != nil {
		t.Fatalf("Close of a New store closed the caller's handle: %v", err)
	}
	if _, err := New(nil); !errors.Is(err, core.ErrInvalidArgument) {
		t.Errorf("New(nil): %v; want an error matching core.ErrInvalidArgument", err)
	}
}

// Two Stores on one file, each with its own handle as two processes would
// have, race for one key: exactly one wins each round.
func TestTwoHandlesRace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "race.db")
	stores := []*Store{open(t, path), open(t, path)}
	ctx := context.Background()
	var last int64
	for round := range 10 {
		start := make(chan struct{})
		var wg sync.WaitGroup
		var wins atomic.Int32
		var winner atomic.Value
		for i := range 16 {
			wg.Go(func() {
				<-start
				owner := fmt.Sprint("caller", i)
				tok, ok, err := stores[i%2].Acquire(ctx, "k", owner, time.Minute)
				if err != nil {
					t.Error(err)
					return
				}
				if ok {
					wins.Add(1)
					winner.Store(owner)
					if tok <= last {
						t.Errorf("token %d after %d", tok, last)
					}
					last = tok
				}
			})
		}
		close(start)
		wg.Wait()
		if wins.Load() != 1 {
			t.Fatalf("round %d: %d winners", round, wins.Load())
		}
		if ok, err := stores[round%2].Release(ctx, "k", winner.Load().(string)); err != nil || !ok {
			t.Fatal(ok, err)
		}
	}
}

// Several processes share one file: each holds the lock in turn, and no
// two hold it at once. The children are this test binary, re-run.
func TestProcessesShareFile(t *testing.T) {
	if os.Getenv("SQLITESTORE_CHILD") != "" {
		t.Skip("in a child")
	}
	dir := t.TempDir()
	path, journal := filepath.Join(dir, "procs.db"), filepath.Join(dir, "journal")
	open(t, path) // migrate once up front; children migrate again, idempotently
	const procs, rounds = 4, 15
	var cmds []*exec.Cmd
	for i := range procs {
		cmd := exec.Command(os.Args[0], "-test.run=^TestChildProcess$", "-test.count=1")
		cmd.Env = append(os.Environ(), "SQLITESTORE_CHILD="+strconv.Itoa(i), "SQLITESTORE_PATH="+path,
			"SQLITESTORE_JOURNAL="+journal, "SQLITESTORE_ROUNDS="+strconv.Itoa(rounds))
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	for _, c := range cmds {
		if err := c.Wait(); err != nil {
			t.Fatalf("child: %v", err)
		}
	}
	f, err := os.Open(journal)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// The journal must read "in T, out T" pairs, tokens growing.
	sc := bufio.NewScanner(f)
	var holder string
	var last int64
	n := 0
	for sc.Scan() {
		var what, who string
		var tok int64
		if _, err := fmt.Sscan(sc.Text(), &what, &who, &tok); err != nil {
			t.Fatal(err)
		}
		switch what {
		case "in":
			if holder != "" {
				t.Fatalf("%s took the lock (token %d) while %s held it", who, tok, holder)
			}
			if tok <= last {
				t.Fatalf("token %d after %d", tok, last)
			}
			holder, last = who, tok
			n++
		case "out":
			if who != holder || tok != last {
				t.Fatalf("%s released token %d, held by %s with %d", who, tok, holder, last)
			}
			holder = ""
		}
	}
	if n != procs*rounds {
		t.Fatalf("%d acquisitions, want %d", n, procs*rounds)
	}
}

// TestChildProcess is one process of TestProcessesShareFile.
func TestChildProcess(t *testing.T) {
	id := os.Getenv("SQLITESTORE_CHILD")
	if id == "" {
		t.Skip("run by TestProcessesShareFile")
	}
	s := open(t, os.Getenv("SQLITESTORE_PATH"))
	journal, err := os.OpenFile(os.Getenv("SQLITESTORE_JOURNAL"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer journal.Close()
	rounds, _ := strconv.Atoi(os.Getenv("SQLITESTORE_ROUNDS"))
	ctx := context.Background()
	owner := "proc" + id
	for done := 0; done < rounds; {
		tok, ok, err := s.Acquire(ctx, "shared", owner, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			// Poll gently: the others wait for the write lock in SQLite's
			// busy handler, and a hammering loop would starve them.
			time.Sleep(5 * time.Millisecond)
			continue
		}
		fmt.Fprintf(journal, "in %s %d\n", owner, tok)
		time.Sleep(2 * time.Millisecond)
		fmt.Fprintf(journal, "out %s %d\n", owner, tok)
		if ok, err := s.Release(ctx, "shared", owner); err != nil || !ok {
			t.Fatal(ok, err)
		}
		done++
	}
}

// TestErrorsNameTheDriver: the store's errors, and its String, say
// "sqlitestore", not the engine's "sqlstore".
func TestErrorsNameTheDriver(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "named.db"))
	if !strings.HasPrefix(s.String(), "sqlitestore ") {
		t.Errorf("String() = %q; want the sqlitestore prefix", s.String())
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := s.Acquire(ctx, "k", "a", time.Minute); err == nil || !strings.HasPrefix(err.Error(), "sqlitestore: ") {
		t.Fatalf("Acquire on a cancelled context: %v; want an error named sqlitestore", err)
	}
}
