package cli

import (
	"strings"
	"testing"
	"time"
)

// TestCheckGrace: --grace must leave SIGTERM after the point where a slow
// renewal could still arrive, and SIGKILL before the deadline; without
// --grace, leasehold picks the longest that fits, at most 10s.
func TestCheckGrace(t *testing.T) {
	for _, tc := range []struct {
		ttl, grace time.Duration
		set        bool
		want       time.Duration
		err        string
	}{
		{ttl: 30 * time.Second, want: 7750 * time.Millisecond},
		{ttl: time.Minute, want: 10 * time.Second},
		{ttl: 3 * time.Second, want: 625 * time.Millisecond},
		{ttl: 3 * time.Second, grace: 625 * time.Millisecond, set: true, want: 625 * time.Millisecond},
		{ttl: 3 * time.Second, grace: 626 * time.Millisecond, set: true, err: "use --grace 625ms or less, or a longer --ttl"},
		{ttl: 30 * time.Second, grace: 10 * time.Second, set: true, err: "--grace 10s does not fit in a 30s lease"},
		{ttl: 30 * time.Second, grace: -time.Second, set: true, err: "negative"},
		{ttl: 3 * time.Second, set: true, want: 0},
	} {
		o := runOptions{ttl: tc.ttl, grace: tc.grace, graceSet: tc.set}
		err := o.checkGrace()
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("ttl %v, grace %v: error %v, want one that says %q", tc.ttl, tc.grace, err, tc.err)
		case tc.err == "" && (err != nil || o.grace != tc.want):
			t.Errorf("ttl %v, grace %v (given %v): got %v, %v; want %v", tc.ttl, tc.grace, tc.set, o.grace, err, tc.want)
		}
	}
}
