package cli

import (
	"bytes"
	"context"
	"errors"
	"net"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestMySQLConfig(t *testing.T) {
	t.Parallel()
	cfg, err := mysqlConfig("mysql://app:p%40ss:word@db.internal:3307/locks?tls=skip-verify&timeout=3s")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.User != "app" || cfg.Passwd != "p@ss:word" || cfg.Net != "tcp" || cfg.Addr != "db.internal:3307" || cfg.DBName != "locks" {
		t.Errorf("config = user %q password %q net %q addr %q db %q", cfg.User, cfg.Passwd, cfg.Net, cfg.Addr, cfg.DBName)
	}
	if !cfg.ParseTime || cfg.Timeout != 3*time.Second || cfg.TLSConfig != "skip-verify" {
		t.Errorf("parameters: parseTime %v timeout %v tls %q", cfg.ParseTime, cfg.Timeout, cfg.TLSConfig)
	}

	cfg, err = mysqlConfig("mysql://root@localhost/test")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Addr != "localhost:3306" || cfg.Passwd != "" || cfg.Timeout != 10*time.Second {
		t.Errorf("defaults: addr %q password %q timeout %v", cfg.Addr, cfg.Passwd, cfg.Timeout)
	}
	cfg, err = mysqlConfig("mysql://root@[::1]/test")
	if err != nil || cfg.Addr != "[::1]:3306" {
		t.Errorf("IPv6: addr %q, err %v", cfg.Addr, err)
	}

	for _, bad := range []string{"mysql://root@localhost", "mysql://root@localhost/a/b", "mysql:root@localhost/x", "mysql://root@localhost/x?parseTime=maybe"} {
		var ue *usageError
		if _, err := mysqlConfig(bad); !errors.As(err, &ue) {
			t.Errorf("mysqlConfig(%q) = %v, want a usage error", bad, err)
		}
	}
}

func TestSQLitePath(t *testing.T) {
	t.Parallel()
	for raw, want := range map[string]string{
		"sqlite:///var/lib/leasehold/locks.db": "/var/lib/leasehold/locks.db",
		"sqlite://locks.db":                    "locks.db",
		"sqlite:locks.db":                      "locks.db",
		"sqlite3:///tmp/x.db":                  "/tmp/x.db",
	} {
		if got, err := sqlitePath(raw); err != nil || got != want {
			t.Errorf("sqlitePath(%q) = %q, %v; want %q", raw, got, err, want)
		}
	}
	for _, bad := range []string{"sqlite://", "sqlite:", "sqlite:///x.db?mode=ro"} {
		if _, err := sqlitePath(bad); err == nil {
			t.Errorf("sqlitePath(%q) succeeded", bad)
		}
	}
}

func TestRedact(t *testing.T) {
	t.Parallel()
	for raw, want := range map[string]string{
		"postgres://u:secret@h:5432/db":     "postgres://u:xxxxx@h:5432/db",
		"postgres://u:secret@h:port/db":     "postgres://xxxxx@h:port/db",
		"mysql://u@h/db":                    "mysql://u@h/db",
		"sqlite:///var/lib/locks.db":        "sqlite:///var/lib/locks.db",
		"postgres://u:sec@ret@h:bad/db?x=1": "postgres://xxxxx@h:bad/db?x=1",
	} {
		if got := redact(raw); got != want {
			t.Errorf("redact(%q) = %q, want %q", raw, got, want)
		}
	}
}

func TestStoreURL(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_STATE_HOME", dir)
	t.Setenv(storeEnv, "")
	if got, err := storeURL(""); err != nil || got != "sqlite://"+filepath.Join(dir, "leasehold", "locks.db") {
		t.Errorf("default store = %q, %v", got, err)
	}
	t.Setenv("XDG_STATE_HOME", "")
	t.Setenv("HOME", dir)
	if got, err := storeURL(""); err != nil || got != "sqlite://"+filepath.Join(dir, ".local", "state", "leasehold", "locks.db") {
		t.Errorf("default store without XDG_STATE_HOME = %q, %v", got, err)
	}
	t.Setenv(storeEnv, "postgres://h/db")
	if got, _ := storeURL(""); got != "postgres://h/db" {
		t.Errorf("store from $%s = %q", storeEnv, got)
	}
	if got, _ := storeURL("mysql://h/db"); got != "mysql://h/db" {
		t.Errorf("store from the flag = %q", got)
	}
}

func TestOpenStoreSQLite(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "new", "dir", "locks.db")
	st, err := openStore(context.Background(), "sqlite://"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if st.lister == nil {
		t.Fatal("the SQLite store cannot list its locks")
	}
	if !strings.Contains(st.String(), path) {
		t.Errorf("String() = %q, want it to name %s", st.String(), path)
	}
	token, ok, err := st.Acquire(context.Background(), "k", "me/1", time.Minute)
	if err != nil || !ok || token <= 0 {
		t.Fatalf("Acquire = %d, %v, %v", token, ok, err)
	}
	infos, err := st.lister.List(context.Background(), "")
	if err != nil || len(infos) != 1 || infos[0].Key != "k" || holder(infos[0].Owner) != "me" {
		t.Errorf("List = %+v, %v", infos, err)
	}
}

// TestOpenStoreRedisErrors: a Redis URL that rueidis cannot parse, or a
// key prefix the store refuses, is a usage error; an unreachable server is
// not; neither shows the password.
func TestOpenStoreRedisErrors(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	l.Close()
	for _, tc := range []struct {
		url   string
		usage bool
	}{
		{"redis://:secret@h:6379/notanumber", true},
		{"rediss://:secret@h:6379/0/1", true},
		{"redis://:secret@" + closed + "/0", false},
		{"valkey://:secret@" + closed + "/0", false},
		{"redis://:secret@" + closed + "?addr=" + closed, false},
	} {
		_, err := openStore(context.Background(), tc.url)
		var usage *usageError
		if err == nil || errors.As(err, &usage) != tc.usage {
			t.Errorf("openStore(%q) = %v; want an error, a usage error: %v", tc.url, err, tc.usage)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("openStore(%q): the error shows the password: %v", tc.url, err)
		}
	}
}

func TestHolderAndFormatting(t *testing.T) {
	t.Parallel()
	for owner, want := range map[string]string{
		"web-1:4242/ABCDEF": "web-1:4242",
		"a/b/RANDOM":        "a/b",
		"plain":             "plain",
	} {
		if got := holder(owner); got != want {
			t.Errorf("holder(%q) = %q, want %q", owner, got, want)
		}
	}
	for d, want := range map[time.Duration]string{
		29*time.Second + 449*time.Millisecond: "29.4s",
		90*time.Second + 400*time.Millisecond: "1m30s",
	} {
		if got := expiresIn(d); got != want {
			t.Errorf("expiresIn(%v) = %q, want %q", d, got, want)
		}
	}
	for s, want := range map[string]string{"jobs/a": "jobs/a", "a b": `"a b"`, "": `""`, "é": "é", "a\x01": `"a\x01"`} {
		if got := quoteIfNeeded(s); got != want {
			t.Errorf("quoteIfNeeded(%q) = %q, want %q", s, got, want)
		}
	}
	env := withoutEnv([]string{"A=1", EnvKey + "=x", "B=2", EnvToken + "=7", "LEASEHOLD_KEYS=y"}, EnvKey, EnvToken)
	if !slices.Equal(env, []string{"A=1", "B=2", "LEASEHOLD_KEYS=y"}) {
		t.Errorf("withoutEnv = %q", env)
	}
}

func TestMainUsage(t *testing.T) {
	t.Parallel()
	var out, errOut bytes.Buffer
	if code := Main([]string{"help", "status"}, &out, &errOut); code != ExitOK || !strings.Contains(out.String(), "--prefix") {
		t.Errorf("help status: %d, %q", code, out.String())
	}
	out.Reset()
	if code := Main([]string{"help", "nope"}, &out, &errOut); code != ExitUsage {
		t.Errorf("help nope: %d", code)
	}
	errOut.Reset()
	if code := Main([]string{"demo", "extra"}, &out, &errOut); code != ExitUsage || strings.Count(errOut.String(), "\n") != 1 {
		t.Errorf("demo extra: %d, %q", code, errOut.String())
	}
}

// TestPausableClock: callbacks run on time unless the clock is paused;
// held ones run at Resume, in order, before Frozen's waiters go; a held
// callback can still be stopped.
func TestPausableClock(t *testing.T) {
	t.Parallel()
	c := newPausableClock()
	ran := make(chan string, 10)
	c.AfterFunc(time.Millisecond, func() { ran <- "running" })
	if got := <-ran; got != "running" {
		t.Fatal(got)
	}

	c.Pause()
	frozen := c.Frozen()
	var mu sync.Mutex
	var order []string
	record := func(s string) func() {
		return func() { mu.Lock(); order = append(order, s); mu.Unlock() }
	}
	c.AfterFunc(5*time.Millisecond, record("first"))
	stopped := c.AfterFunc(10*time.Millisecond, record("stopped"))
	c.AfterFunc(20*time.Millisecond, record("second"))
	time.Sleep(100 * time.Millisecond) // all three have fired, and are held
	mu.Lock()
	if len(order) != 0 {
		t.Fatalf("callbacks ran while paused: %v", order)
	}
	mu.Unlock()
	if !stopped.Stop() {
		t.Error("Stop of a held callback = false")
	}
	select {
	case <-frozen:
		t.Fatal("Frozen ended while paused")
	default:
	}
	c.Resume()
	<-frozen
	mu.Lock()
	if !slices.Equal(order, []string{"first", "second"}) {
		t.Errorf("held callbacks ran as %v, want [first second]", order)
	}
	mu.Unlock()

	late := c.AfterFunc(time.Hour, func() { t.Error("a stopped timer ran") })
	if !late.Stop() || late.Stop() {
		t.Error("Stop: want true, then false")
	}
}

func TestVersionLine(t *testing.T) {
	t.Parallel()
	vcs := []debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.modified", Value: "true"}}
	for _, tc := range []struct {
		name string
		info *debug.BuildInfo
		ok   bool
		want string
	}{
		{"release", &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "v0.3.0"}}, true, "leasehold v0.3.0, built with go1.26.0"},
		{"clone", &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "(devel)"}, Settings: vcs}, true, "leasehold (devel), built with go1.26.0, from revision 0123456789ab with local changes"},
		{"clone, stamped", &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "v0.0.0-20260301120000-0123456789ab+dirty"}, Settings: vcs}, true, "leasehold v0.0.0-20260301120000-0123456789ab+dirty, built with go1.26.0"},
		{"no build info", nil, false, "leasehold (unknown version: built without module information)"},
	} {
		if got := versionLine(tc.info, tc.ok); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
