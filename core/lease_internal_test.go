package core

import (
	"errors"
	"testing"
	"time"
)

// The loss rules as transitions of a lease, without a clock, a keeper or a
// store: what each turn and each answer means.

var leaseT0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func heldLease(ttl time.Duration) *lease {
	return &lease{deadline: holderDeadline(leaseT0, ttl)}
}

func TestLeaseTurnSendsThenWaits(t *testing.T) {
	s := heldLease(30 * time.Second)
	at := leaseT0.Add(10 * time.Second)
	if step, deadline := s.turn(at); step != stepSend || !deadline.Equal(s.deadline) {
		t.Fatalf("first turn: %v, %v; want a renewal to send, and to look again at the deadline %v", step, deadline, s.deadline)
	}
	if step, deadline := s.turn(at); step != stepWait || !deadline.Equal(s.deadline) {
		t.Fatalf("turn with a renewal in flight: %v, %v; want to wait until the deadline", step, deadline)
	}
	if step, _ := s.turn(s.deadline); step != stepLose {
		t.Fatalf("turn at the deadline with the renewal still out: %v; want the lock lost", step)
	}
}

func TestLeaseAnswerConfirmed(t *testing.T) {
	const ttl = 30 * time.Second
	s := heldLease(ttl)
	sent := leaseT0.Add(10 * time.Second)
	s.turn(sent)
	v := s.answer(ttl, sent, sent.Add(time.Second), true, nil)
	if v.lost != 0 || !v.retry.IsZero() || !v.due.Equal(sent.Add(ttl/3)) {
		t.Fatalf("verdict %+v; want the next renewal due ttl/3 after the send", v)
	}
	// The deadline counts from the send, not from the answer.
	if want := sent.Add(ttl - SafetyMargin(ttl)); !s.deadline.Equal(want) {
		t.Fatalf("deadline %v; want %v", s.deadline, want)
	}
	if s.renewing != nil {
		t.Fatal("renewal still marked in flight after its answer")
	}
}

func TestLeaseAnswerRefused(t *testing.T) {
	s := heldLease(30 * time.Second)
	s.turn(leaseT0)
	if v := s.answer(30*time.Second, leaseT0, leaseT0, false, nil); v.lost != LostRefused {
		t.Fatalf("verdict %+v; want lost, refused", v)
	}
}

func TestLeaseAnswerFailedRetriesUntilDeadline(t *testing.T) {
	const ttl = 30 * time.Second
	s := heldLease(ttl)
	deadline := s.deadline
	failed := errors.New("store down")
	now := leaseT0.Add(10 * time.Second)
	s.turn(now)
	if v := s.answer(ttl, now, now, false, failed); v.lost != 0 || !v.due.IsZero() || !v.retry.Equal(now.Add(ttl/10)) {
		t.Fatalf("verdict %+v; want a retry ttl/10 later", v)
	}
	if !s.deadline.Equal(deadline) || s.lastErr != failed {
		t.Fatalf("deadline %v, last error %v; want the deadline unmoved and the error kept", s.deadline, s.lastErr)
	}
	late := deadline.Add(-time.Second)
	s.turn(late)
	if v := s.answer(ttl, late, late, false, failed); !v.retry.Equal(deadline) {
		t.Fatalf("retry at %v; want no later than the deadline %v", v.retry, deadline)
	}
	lost, _, ok := s.lose("k", 7, LostDeadline)
	if !ok || lost.Reason != LostDeadline || !errors.Is(lost, failed) || lost.Token != 7 {
		t.Fatalf("lose: %v, %v; want lost at the deadline with the last error", lost, ok)
	}
}

func TestLeaseEndsOnce(t *testing.T) {
	s := heldLease(30 * time.Second)
	var causes []error
	if _, held := s.whenEnded(func(err error) { causes = append(causes, err) }); !held {
		t.Fatal("whenEnded on a held lease did not wait")
	}
	lost, hooks, ok := s.lose("k", 1, LostRefused)
	if !ok || len(hooks) != 1 {
		t.Fatalf("lose: ok %v, %d hooks; want the one hook", ok, len(hooks))
	}
	runHooks(hooks, lost)
	if _, _, ok := s.lose("k", 1, LostDeadline); ok {
		t.Fatal("a lost lease was lost again")
	}
	if _, _, err, ok := s.release(); ok || err != lost {
		t.Fatalf("release after loss: ok %v, err %v; want refused with the loss", ok, err)
	}
	if v := s.answer(30*time.Second, leaseT0, leaseT0, true, nil); v != (verdict{}) {
		t.Fatalf("answer after loss: %+v; want nothing to do", v)
	}
	if step, _ := s.turn(leaseT0); step != stepDrop {
		t.Fatalf("turn after loss: %v; want the lock dropped", step)
	}
	if len(causes) != 1 || causes[0] != lost {
		t.Fatalf("hooks heard %v; want the loss once", causes)
	}
}
