package sqlstore

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeListener is a Listener driven by the test: every Listen fails with
// failing, if set; else it is ready at once and listens until ctx ends.
type fakeListener struct {
	mu      sync.Mutex
	calls   int
	notify  func(string)
	ready   func()
	failing error
	started chan struct{}
}

func (l *fakeListener) Listen(ctx context.Context, channel string, ready func(), notify func(string)) error {
	l.mu.Lock()
	l.calls++
	fail := l.failing
	l.notify, l.ready = notify, ready
	l.mu.Unlock()
	if fail != nil {
		return fail
	}
	ready()
	l.started <- struct{}{}
	<-ctx.Done()
	return ctx.Err()
}

// syncBuffer is a log sink safe for the listener's goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

func wakeCounter() (func(), func() int) {
	var mu sync.Mutex
	n := 0
	return func() { mu.Lock(); n++; mu.Unlock() }, func() int { mu.Lock(); defer mu.Unlock(); return n }
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// A notification wakes the waiters of its key only; LISTEN taking effect
// wakes every waiter.
func TestListenerWakes(t *testing.T) {
	l := &fakeListener{started: make(chan struct{}, 1)}
	s, err := NewWithExecutor(&fakeExec{}, Postgres, WithListener(l))
	if err != nil {
		t.Fatal(err)
	}
	wakeA, countA := wakeCounter()
	wakeB, countB := wakeCounter()
	offA, live := s.Subscribe("a", wakeA)
	defer offA()
	if !live {
		t.Fatal("a store with a listener reports no notifications")
	}
	offB, _ := s.Subscribe("b", wakeB)
	defer offB()
	<-l.started
	eventually(t, "the ready wake", func() bool { return countA() >= 1 })
	before, beforeB := countA(), countB()
	l.mu.Lock()
	notify := l.notify
	l.mu.Unlock()
	notify("a")
	if countA() != before+1 || countB() != beforeB {
		t.Fatalf("wakes a %d→%d, b %d→%d; want a notification of a to wake a only", before, countA(), beforeB, countB())
	}
	if l.calls != 1 {
		t.Fatalf("%d Listen calls for two waiters, want one shared", l.calls)
	}
}

// A failed LISTEN is logged once, clearly; the store then reports no
// notifications, and goes on working.
func TestListenerFailureLogged(t *testing.T) {
	var logs syncBuffer
	l := &fakeListener{failing: errors.New("cannot LISTEN in transaction pooling mode")}
	s, err := NewWithExecutor(&fakeExec{}, Postgres, WithListener(l), WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	if err != nil {
		t.Fatal(err)
	}
	off, _ := s.Subscribe("k", func() {})
	defer off()
	eventually(t, "the warning", func() bool { return strings.Contains(logs.String(), "cannot LISTEN for release notifications") })
	if !strings.Contains(logs.String(), "transaction pooling") || !strings.Contains(logs.String(), "WithoutNotifications") {
		t.Fatalf("log %q: want the cause and the option", logs.String())
	}
	off2, live := s.Subscribe("k", func() {})
	defer off2()
	if live {
		t.Fatal("after a failed LISTEN the store still reports notifications")
	}
}

// Without a listener, with WithoutNotifications, or on a dialect without
// notifications, Subscribe reports none and starts nothing.
func TestNoNotifications(t *testing.T) {
	l := &fakeListener{started: make(chan struct{}, 1)}
	for name, opts := range map[string][]Option{
		"no listener":          nil,
		"WithoutNotifications": {WithListener(l), WithoutNotifications()},
	} {
		s, err := NewWithExecutor(&fakeExec{}, Postgres, opts...)
		if err != nil {
			t.Fatal(err)
		}
		if off, live := s.Subscribe("k", func() {}); live {
			t.Errorf("%s: live notifications", name)
		} else {
			off()
		}
	}
	s, err := NewWithExecutor(&fakeTx{}, MySQL, WithListener(l))
	if err != nil {
		t.Fatal(err)
	}
	if _, live := s.Subscribe("k", func() {}); live {
		t.Error("MySQL: live notifications")
	}
	if l.calls != 0 {
		t.Errorf("%d Listen calls, want none", l.calls)
	}
}
