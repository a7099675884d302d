package conformance

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold/core"
)

// TestHistoryJudgesByEitherClock: a store times leases by the machine's
// wall clock (SQLite's julianday('now'), a server's now()) or by its
// monotonic clock. When the wall clock is stepped ahead during a case, a
// wall-clock store frees a lock early on the monotonic clock, and the
// history check must not call that a flaw; a store that frees it early on
// both clocks stays illegal. The calls are those of a GORM run on SQLite
// under a CPU hog, which the check once failed with a usual fix: a lock of
// 1.2 s taken at 5.686 s, refused to its holder's Release and granted to a
// new owner at 6.879 s, about 6 ms early on the monotonic clock.
func TestHistoryJudgesByEitherClock(t *testing.T) {
	ms := func(f float64) time.Duration { return time.Duration(f * float64(time.Millisecond)) }
	for _, tc := range []struct {
		name      string
		ahead     time.Duration // how far the wall clock was stepped ahead before the release
		wantLegal bool
	}{
		{"clocks agree", 0, false},
		{"wall clock stepped 7ms ahead", 7 * time.Millisecond, true},
		{"wall clock stepped 7ms behind", -7 * time.Millisecond, false},
		{"wall clock stepped 3ms ahead", 3 * time.Millisecond, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Each call reads the clocks at its start and at its end.
			readings := []struct{ now, ahead time.Duration }{
				{ms(5685.526), 0}, {ms(5686.175), 0},
				{ms(6878.638), tc.ahead}, {ms(6878.788), tc.ahead},
				{ms(6879.761), tc.ahead}, {ms(6880.115), tc.ahead},
			}
			h := &history{clocks: func() (time.Duration, time.Duration) {
				r := readings[0]
				readings = readings[1:]
				return r.now, r.ahead
			}}
			h.record(call{op: "acquire", key: "k", owner: "old", ttl: 1200 * time.Millisecond}, func() answer { return answer{token: 612, ok: true} })
			h.record(call{op: "release", key: "k", owner: "old"}, func() answer { return answer{} })
			h.record(call{op: "acquire", key: "k", owner: "new", ttl: time.Minute}, func() answer { return answer{token: 644, ok: true} })
			r := &recorder{TB: t}
			h.check(r)
			msg := strings.Join(r.messages, "\n")
			if legal := !r.failed; legal != tc.wantLegal {
				t.Fatalf("history judged legal = %v, want %v: %s", legal, tc.wantLegal, msg)
			}
			if tc.ahead != 0 && !tc.wantLegal && !strings.Contains(msg, "read up to "+tc.ahead.Abs().String()+" away") {
				t.Errorf("the failure does not say how far the clocks parted: %s", msg)
			}
		})
	}
}

// TestHistoryBoundsACallDuringAMove: with AdvanceTime, a race case moves
// the store's clock while its other goroutines call the store. A renewal
// refused because the clock had just moved past the lock's expiry, made
// before the case counted the move as done, is legal: the history must
// bound it by the move in progress. (Under load, the kit once failed the
// memory store on a manual clock so, with a usual fix.)
func TestHistoryBoundsACallDuringAMove(t *testing.T) {
	clock := core.NewManualClock(time.Unix(1_700_000_000, 0))
	store := core.NewMemoryStore(core.WithMemoryClock(clock))
	var during func() // a call of the case's, made while the clock moves
	opts := Options{AdvanceTime: func(d time.Duration) {
		clock.Advance(d)
		if during != nil {
			during()
		}
	}}
	renewed := true
	c := Case{Name: "renew-during-move", Concurrent: true, run: func(t testing.TB, e *env) {
		ttl := e.opts.TTL
		key, owner := e.key(), e.owner("old")
		e.mustAcquire(t, key, owner, ttl, "no lock has ever held this key")
		during = func() {
			var err error
			renewed, err = e.store.Renew(context.Background(), key, owner, ttl)
			if err != nil {
				t.Errorf("Renew: %v", err)
			}
		}
		e.startTimeline().until(ttl + ttl/10)
	}}
	out := startRecorded(t, c, func(testing.TB) core.LockStore { return store }, opts).wait()
	if renewed {
		t.Fatal("the store renewed a lock after its clock moved past the lock's expiry; the test needs it refused")
	}
	if out.failed {
		t.Fatalf("the history check failed a refusal made while the store's clock moved past the expiry: %v", out)
	}
}
