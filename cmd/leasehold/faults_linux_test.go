package main

// Fault tests of leasehold run's supervision, with real processes: the
// runner (the process that renews the lease) is killed, frozen, or cut off
// from its store while the command runs a tree of processes that ignore
// SIGTERM, one of them in a session of its own (setsid). Each test
// measures the margin between the death of the tree's last process and the
// lease's expiry on the store's clock, which must be positive, and checks
// that no line reaches the fenced log after the next holder's.
//
// Each scenario runs once per store by default; LEASEHOLD_FAULT_RUNS=N runs
// it N times, and -v prints every margin.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// faultTTL is the lease's ttl in the fault tests: the default grace is then
// ttl/3 - 250ms = 750ms.
const faultTTL = 3 * time.Second

// faultScript is the command: a shell that ignores SIGTERM and starts a
// writer in a session of its own (setsid), which ignores SIGTERM too and
// appends its fencing token to the log every 100 ms, and a second shell in
// the group; every process of the tree has LEASEHOLD_KEY in its environment.
const faultScript = `export D="$1"
trap '' TERM
setsid sh -c 'trap "" TERM; while :; do echo "$LEASEHOLD_FENCING_TOKEN" >> "$D/log"; sleep 0.1; done' &
sh -c 'trap "" TERM; while :; do sleep 0.1; done' &
touch "$D/started"
while :; do sleep 0.1; done
`

// faultStores are the stores the fault tests run on: SQLite always,
// PostgreSQL and Redis when their variables name servers.
func faultStores(t *testing.T) map[string]string {
	stores := map[string]string{"sqlite": ""}
	if pg := os.Getenv("LEASEHOLD_TEST_POSTGRES"); pg != "" {
		stores["postgres"] = pg
	}
	if r := os.Getenv("LEASEHOLD_TEST_REDIS"); r != "" {
		stores["redis"] = redisStore(t, r)
	}
	return stores
}

func faultRuns(t *testing.T) int {
	n, err := strconv.Atoi(os.Getenv("LEASEHOLD_FAULT_RUNS"))
	if err != nil || n < 1 {
		return 1
	}
	return n
}

// treeProcs returns the live processes (not zombies) whose environment
// holds LEASEHOLD_KEY=key: the command's tree, wherever it went.
func treeProcs(key string) []int {
	want := []byte("\x00LEASEHOLD_KEY=" + key + "\x00")
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil || !bytes.Contains(append([]byte{0}, env...), want) {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		if i := bytes.LastIndexByte(stat, ')'); i > 0 && len(stat) > i+2 && (stat[i+2] == 'Z' || stat[i+2] == 'X') {
			continue
		}
		pids = append(pids, pid)
	}
	return pids
}

// leaseEnd is when the store expires a lease, as times of this process's
// clock: between lo and hi. The store answers the time left when it runs
// the status query, some moment between the start of leasehold status and
// its exit (hundreds of milliseconds apart on a loaded machine).
type leaseEnd struct{ lo, hi time.Time }

// expiry asks the store when the lease on key expires. ok is false when
// the key is not held.
func expiry(t *testing.T, dir, store, key string) (leaseEnd, bool) {
	t.Helper()
	before := time.Now()
	r := lh(t, dir, "status", "--store", store, "--prefix", key, "--format", "json")
	after := time.Now()
	var locks []struct {
		Key         string `json:"key"`
		ExpiresInMS int64  `json:"expires_in_ms"`
	}
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &locks) != nil {
		t.Fatalf("status: code %d, stdout %q, stderr:\n%s", r.code, r.stdout, r.stderr)
	}
	for _, l := range locks {
		if l.Key == key {
			left := time.Duration(l.ExpiresInMS) * time.Millisecond
			return leaseEnd{before.Add(left), after.Add(left)}, true
		}
	}
	return leaseEnd{}, false
}

// fencedLog replays the log as a fenced resource would have taken it, in
// the order the writes reached it: a write is refused when its token is
// lower than one the resource has seen. It returns the refused writes.
func fencedLog(t *testing.T, path string) (accepted, refused []int64) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var highest int64
	for _, line := range strings.Fields(string(b)) {
		n, err := strconv.ParseInt(line, 10, 64)
		if err != nil {
			continue // a line cut by SIGKILL
		}
		if n < highest {
			refused = append(refused, n)
			continue
		}
		highest = n
		accepted = append(accepted, n)
	}
	return accepted, refused
}

// faultRun is one run of a scenario: the supervised command started, the
// fault applied, the tree's end measured.
type faultRun struct {
	t          *testing.T
	dir, store string
	key        string
	p          *proc
	runner     int
}

func startFaultRun(t *testing.T, store string, extra ...string) *faultRun {
	dir := t.TempDir()
	if store == "" {
		store = sqliteURL(dir)
	}
	key := fmt.Sprintf("fault/%d-%d", os.Getpid(), time.Now().UnixNano())
	script := filepath.Join(dir, "tree.sh")
	if err := os.WriteFile(script, []byte(faultScript), 0o600); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"run", "--store", store, "--key", key, "--ttl", faultTTL.String()}, extra...)
	p := start(t, dir, append(args, "--", "sh", script, dir)...)
	t.Cleanup(func() {
		for _, pid := range treeProcs(key) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	waitForFile(t, filepath.Join(dir, "started"))
	waitForFile(t, filepath.Join(dir, "log"))
	return &faultRun{t: t, dir: dir, store: store, key: key, p: p, runner: runnerOf(t, p.cmd.Process.Pid)}
}

// watchTreeEnd starts watching for the last process of the command's tree
// to die, from now on, while the test does other things (reading the
// lease's expiry takes a process of its own); await returns when it died
// (within the 2 ms of a look).
func (f *faultRun) watchTreeEnd(within time.Duration) (await func() time.Time) {
	died := make(chan time.Time, 1)
	go func() {
		deadline := time.Now().Add(within)
		for time.Now().Before(deadline) {
			if len(treeProcs(f.key)) == 0 {
				died <- time.Now()
				return
			}
			time.Sleep(2 * time.Millisecond)
		}
		died <- time.Time{}
	}()
	return func() time.Time {
		f.t.Helper()
		end := <-died
		if end.IsZero() {
			f.t.Fatalf("the command's tree outlived %v: %v; leasehold's stderr:\n%s", within, treeProcs(f.key), f.p.stderr.String())
		}
		return end
	}
}

// awaitTreeEnd waits for the last process of the command's tree to die
// and returns when it did.
func (f *faultRun) awaitTreeEnd(within time.Duration) time.Time {
	f.t.Helper()
	return f.watchTreeEnd(within)()
}

// settledExpiry asks the store when the lease expires, right after the
// fault: with the runner killed, frozen or cut off, no renewal reaches the
// store any more, so this is the expiry the tree's death must beat. It is
// read before the tree dies, not after: a look that comes late (a slow
// machine) would find the lease gone and could not tell why.
func (f *faultRun) settledExpiry() leaseEnd {
	f.t.Helper()
	exp, held := expiry(f.t, f.dir, f.store, f.key)
	if !held {
		f.t.Fatalf("the lease was not held right after the fault; stderr:\n%s", f.p.stderr.String())
	}
	return exp
}

// margin is how long, at least, before the lease's expiry the tree died;
// 0 when the measurement cannot tell (the tree died between the earliest
// and the latest moment the expiry may be). exp is the settled expiry; a
// renewal already on its way when the fault struck may have moved it
// later, so a lease still held after the tree's end is read again.
func (f *faultRun) margin(exp leaseEnd, end time.Time) time.Duration {
	f.t.Helper()
	if later, held := expiry(f.t, f.dir, f.store, f.key); held && later.lo.After(exp.lo) {
		exp = later
	}
	switch {
	case end.After(exp.hi):
		f.t.Fatalf("the tree died %v after the lease's expiry; stderr:\n%s", end.Sub(exp.hi), f.p.stderr.String())
	case end.After(exp.lo):
		f.t.Logf("inconclusive margin: the tree died within the %v that leasehold status took to answer, around the lease's expiry; a quieter machine can tell", exp.hi.Sub(exp.lo).Round(time.Millisecond))
		return 0
	}
	return exp.lo.Sub(end)
}

// nextHolder runs another holder's write on the key, waiting for the lease,
// and checks the fenced log: no write of the old holder came after it.
func (f *faultRun) nextHolder() {
	f.t.Helper()
	r := lh(f.t, f.dir, "run", "--store", f.store, "--key", f.key, "--wait", "30s", "--", "sh", "-c", `echo "$LEASEHOLD_FENCING_TOKEN" >> "$0/log"; sleep 0.3`, f.dir)
	if r.code != 0 {
		f.t.Fatalf("next holder: code %d, stderr:\n%s", r.code, r.stderr)
	}
	if _, refused := fencedLog(f.t, filepath.Join(f.dir, "log")); len(refused) > 0 {
		f.t.Fatalf("%d writes with an old token reached the log after the next holder's: %v", len(refused), refused)
	}
}

// margins collects a scenario's figures for the log.
type margins struct {
	mu sync.Mutex
	m  map[string][]time.Duration
}

func (ms *margins) add(store string, d time.Duration) {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	if ms.m == nil {
		ms.m = map[string][]time.Duration{}
	}
	ms.m[store] = append(ms.m[store], d)
}

func (ms *margins) log(t *testing.T) {
	for store, ds := range ms.m {
		lo, hi := ds[0], ds[0]
		for _, d := range ds {
			lo, hi = min(lo, d), max(hi, d)
		}
		t.Logf("%s: %d runs, margin before the lease's expiry: min %v, max %v", store, len(ds), lo.Round(time.Millisecond), hi.Round(time.Millisecond))
	}
}

// forEachStore runs scenario faultRuns times on each store, one run at a
// time per store.
func forEachStore(t *testing.T, scenario func(t *testing.T, store string) time.Duration) {
	var ms margins
	t.Cleanup(func() { ms.log(t) })
	for name, store := range faultStores(t) {
		t.Run(name, func(t *testing.T) {
			for i := range faultRuns(t) {
				t.Run(strconv.Itoa(i), func(t *testing.T) {
					if m := scenario(t, store); m > 0 {
						ms.add(name, m)
					}
				})
			}
		})
	}
}

// TestFaultRunnerKilled: kill -9 of the runner. The supervisor stops the
// whole tree (SIGTERM, ignored; SIGKILL after the grace) before the lease
// expires, and exits 76; the next holder's write is the last.
func TestFaultRunnerKilled(t *testing.T) {
	forEachStore(t, func(t *testing.T, store string) time.Duration {
		f := startFaultRun(t, store)
		if err := syscall.Kill(f.runner, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		treeEnd := f.watchTreeEnd(2 * faultTTL)
		exp := f.settledExpiry()
		m := f.margin(exp, treeEnd())
		if r := f.p.wait(t); r.code != 76 || !strings.Contains(r.stderr, "was killed (signal 9)") {
			t.Errorf("code %d, want 76 and the runner's death; stderr:\n%s", r.code, r.stderr)
		}
		f.nextHolder()
		return m
	})
}

// TestFaultRunnerFrozen: SIGSTOP of the runner alone for 3 × ttl. The
// supervisor stops the tree before the lease expires; on SIGCONT the
// runner says the lease was lost while it was frozen, and leasehold exits
// 76.
func TestFaultRunnerFrozen(t *testing.T) {
	forEachStore(t, func(t *testing.T, store string) time.Duration {
		f := startFaultRun(t, store)
		frozen := time.Now()
		if err := syscall.Kill(f.runner, syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		// SQLite: the frozen runner may hold the file's write lock, and
		// status would wait for it.
		measure := f.store != sqliteURL(f.dir)
		treeEnd := f.watchTreeEnd(2 * faultTTL)
		var exp leaseEnd
		if measure {
			exp = f.settledExpiry()
		}
		end := treeEnd()
		var m time.Duration
		if measure {
			m = f.margin(exp, end)
		}
		time.Sleep(time.Until(frozen.Add(3 * faultTTL)))
		syscall.Kill(f.runner, syscall.SIGCONT)
		r := f.p.wait(t)
		if r.code != 76 || !strings.Contains(r.stderr, "lost while leasehold was frozen") {
			t.Errorf("code %d, want 76 and the loss while frozen; stderr:\n%s", r.code, r.stderr)
		}
		f.nextHolder()
		return m
	})
}

// TestFaultStoreStalls: the store stops answering the runner (a proxy that
// holds its traffic; for SQLite, another process holding the file's write
// lock). The supervisor stops the tree before the lease can expire.
func TestFaultStoreStalls(t *testing.T) {
	forEachStore(t, func(t *testing.T, store string) time.Duration {
		if store == "" {
			t.Skip("SQLite: a stalled store is a held write lock, under which status cannot read the expiry; covered by TestFaultRunnerFrozen")
		}
		px := newStallProxy(t, store)
		f := startFaultRun(t, px.url)
		px.stall()
		f.store = store // the measurement goes to the store directly
		treeEnd := f.watchTreeEnd(2 * faultTTL)
		exp := f.settledExpiry()
		m := f.margin(exp, treeEnd())
		if r := f.p.wait(t); r.code != 76 {
			t.Errorf("code %d, want 76; stderr:\n%s", r.code, r.stderr)
		}
		f.nextHolder()
		return m
	})
}

// TestFaultWholeTreeFrozen: leasehold and its command frozen together (a
// VM pause) until another holder has taken the key and written. No bound
// holds on what a frozen host does on thawing: the writes the old tree
// sends before the supervisor kills it reach the log, and a fenced resource
// refuses every one of them. This is what fencing tokens are for.
func TestFaultWholeTreeFrozen(t *testing.T) {
	forEachStore(t, func(t *testing.T, store string) time.Duration {
		if store == "" {
			t.Skip("SQLite: one host's store, and a VM pause freezes every holder on the host (the frozen runner may even hold the file's write lock)")
		}
		f := startFaultRun(t, store)
		all := append([]int{f.p.cmd.Process.Pid, f.runner}, treeProcs(f.key)...)
		for _, pid := range all {
			syscall.Kill(pid, syscall.SIGSTOP)
		}
		r := lh(t, f.dir, "run", "--store", f.store, "--key", f.key, "--wait", "30s", "--", "sh", "-c", `echo "$LEASEHOLD_FENCING_TOKEN" >> "$0/log"`, f.dir)
		if r.code != 0 {
			t.Fatalf("next holder: code %d, stderr:\n%s", r.code, r.stderr)
		}
		for _, pid := range all {
			syscall.Kill(pid, syscall.SIGCONT)
		}
		f.awaitTreeEnd(2 * faultTTL)
		if r := f.p.wait(t); r.code != 76 {
			t.Errorf("code %d, want 76; stderr:\n%s", r.code, r.stderr)
		}
		accepted, refused := fencedLog(t, filepath.Join(f.dir, "log"))
		if len(accepted) == 0 || accepted[len(accepted)-1] <= accepted[0] {
			t.Fatalf("the next holder's write was not accepted: accepted %v, refused %v", accepted, refused)
		}
		t.Logf("after the thaw, %d writes with the old token reached the log and were refused", len(refused))
		return 0
	})
}

// stallProxy forwards TCP connections to a store's server until stall is
// called; from then on it forwards nothing, in either direction, and keeps
// the connections open: a server that stopped answering.
type stallProxy struct {
	url     string
	mu      sync.Mutex
	stalled chan struct{}
	closed  chan struct{} // the test is over
}

func newStallProxy(t *testing.T, store string) *stallProxy {
	t.Helper()
	u, err := url.Parse(store)
	if err != nil {
		t.Fatal(err)
	}
	target := u.Host
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u.Host = l.Addr().String()
	px := &stallProxy{url: u.String(), stalled: make(chan struct{}), closed: make(chan struct{})}
	var (
		mu    sync.Mutex
		conns []net.Conn
	)
	t.Cleanup(func() {
		l.Close()
		close(px.closed)
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			mu.Lock()
			conns = append(conns, c, s)
			mu.Unlock()
			go px.pipe(s, c)
			go px.pipe(c, s)
		}
	}()
	return px
}

// pipe copies from src to dst until the proxy stalls.
func (px *stallProxy) pipe(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		select {
		case <-px.stalled:
			<-px.closed // hold the connection, forward nothing
			return
		default:
		}
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (px *stallProxy) stall() {
	px.mu.Lock()
	defer px.mu.Unlock()
	select {
	case <-px.stalled:
	default:
		close(px.stalled)
	}
}
