package core_test

import (
	"context"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/leasehold/leasehold/core"
	"github.com/leasehold/leasehold/core/coretest"
)

var (
	tokenAttr      = regexp.MustCompile(` token=(\d+)`)
	leaseTokenAttr = regexp.MustCompile(` lease_token=(\d+)`)
)

// attr returns the value of the attribute re matches in line, or -1.
func attr(t *testing.T, re *regexp.Regexp, line string) int64 {
	t.Helper()
	m := re.FindStringSubmatch(line)
	if m == nil {
		return -1
	}
	n, err := strconv.ParseInt(m[1], 10, 64)
	if err != nil {
		t.Fatalf("%s in %q: %v", re, line, err)
	}
	return n
}

// TestJobTokenStory checks that a job's log lines and LockFromContext tell
// one story: "token" in a job's lines is always the token its runs fence
// with, which is the token of the lock LockFromContext gives the run, and
// Job.FencesWith names that lock; the lease's token, when runs fence with
// the run lock, is "lease_token".
func TestJobTokenStory(t *testing.T) {
	for _, tc := range []struct {
		name  string
		opts  []core.JobOption
		lease bool // the job has a lease
		fence core.LockKind
	}{
		{"OnOneInstance", []core.JobOption{core.OnOneInstance()}, true, core.KindJobLease},
		{"WithoutOverlapping", []core.JobOption{core.WithoutOverlapping()}, false, core.KindRunLock},
		{"both", []core.JobOption{core.OnOneInstance(), core.WithoutOverlapping()}, true, core.KindRunLock},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := core.NewManualClock(clusterStart)
			store := core.NewMemoryStore(core.WithMemoryClock(clock))
			logs := &coretest.LogBuffer{}
			l := coretest.NewLocks(t, store, core.WithClock(clock), core.WithLogger(logs.Logger()))
			var seen []*core.Lock
			job, err := l.Job(func(ctx context.Context) error {
				seen = append(seen, core.LockFromContext(ctx))
				return nil
			}, append([]core.JobOption{core.WithJobKey("report"), core.WithJobTTL(9 * time.Second)}, tc.opts...)...)
			if err != nil {
				t.Fatal(err)
			}
			if got := job.FencesWith(); got != tc.fence {
				t.Fatalf("FencesWith() = %v, want %v", got, tc.fence)
			}
			for range 3 {
				if err := job.Run(context.Background()); err != nil {
					t.Fatalf("Run: %v", err)
				}
			}
			if len(seen) != 3 {
				t.Fatalf("the job ran %d times, want 3", len(seen))
			}
			wantKey := map[core.LockKind]string{core.KindJobLease: "report:owner", core.KindRunLock: "report"}[tc.fence]
			started := logs.Lines(`msg="leasehold: job run started"`, "key=report ")
			if len(started) != len(seen) {
				t.Fatalf("%d run-started lines for %d runs:\n%s", len(started), len(seen), logs)
			}
			for i, lk := range seen {
				if lk == nil || lk.Key() != wantKey {
					t.Fatalf("run %d: LockFromContext gave %v, want the lock %q (%v)", i, lk, wantKey, tc.fence)
				}
				// A run lock is taken for each run, so each run fences
				// with a higher token; a lease is kept across runs.
				if i > 0 && tc.fence == core.KindRunLock && lk.Token() <= seen[i-1].Token() {
					t.Errorf("run %d fences with token %d, run %d with %d: want a higher token every run", i, lk.Token(), i-1, seen[i-1].Token())
				}
				if i > 0 && tc.fence == core.KindJobLease && lk.Token() != seen[0].Token() {
					t.Errorf("run %d fences with token %d, run 0 with %d: want the lease's one token", i, lk.Token(), seen[0].Token())
				}
				if got := attr(t, tokenAttr, started[i]); got != lk.Token() {
					t.Errorf("run %d: logged token=%d, LockFromContext(ctx).Token() = %d:\n%s", i, got, lk.Token(), started[i])
				}
			}

			taken := logs.Lines(`msg="leasehold: job lease taken; this instance runs the job"`, "key=report ")
			if !tc.lease {
				if len(taken) != 0 {
					t.Fatalf("a job without a lease logged a lease: %q", taken)
				}
				return
			}
			if len(taken) != 1 {
				t.Fatalf("%d lease-taken lines, want 1:\n%s", len(taken), logs)
			}
			lease := int64(-1)
			for _, info := range live(t, store) {
				if info.Key == "report:owner" {
					lease = info.Token
				}
			}
			switch tc.fence {
			case core.KindJobLease:
				if got := attr(t, tokenAttr, taken[0]); got != seen[0].Token() || got != lease {
					t.Errorf("lease line token=%d, LockFromContext(ctx).Token() = %d, lease in the store %d: %q", got, seen[0].Token(), lease, taken[0])
				}
			case core.KindRunLock:
				if got := attr(t, tokenAttr, taken[0]); got != -1 {
					t.Errorf("the lease line has token=%d, but runs fence with the run lock: %q", got, taken[0])
				}
				if got := attr(t, leaseTokenAttr, taken[0]); got != lease {
					t.Errorf("lease line lease_token=%d, the lease's token in the store is %d: %q", got, lease, taken[0])
				}
			}
		})
	}
}
