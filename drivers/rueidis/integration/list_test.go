package integration

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/testserver"
)

// servers are the two kinds of server every test below runs on.
var servers = []struct {
	name string
	get  func(testing.TB) (string, string)
}{
	{"standalone", testserver.Redis},
	{"cluster", testserver.RedisCluster},
}

// TestList: List finds the live locks whose key starts with the prefix,
// on every node, however the prefix and keys would read as glob patterns
// or hash tags, and nothing else: no released or expired lock, no floor.
func TestList(t *testing.T) {
	for _, srv := range servers {
		t.Run(srv.name, func(t *testing.T) {
			url, prefix := srv.get(t)
			s := newStore(t, url, prefix+"*?[")
			ctx := context.Background()
			held := []string{"jobs/a", "jobs/{b}", "jobs/%7B", "jobs*", "jobs/" + string(rune(0x1F512)), "other", "jobs"}
			tokens := map[string]int64{}
			for i := range 40 { // enough keys to land on every master
				held = append(held, "spread/"+string(rune('a'+i)))
			}
			for _, k := range held {
				tokens[k] = mustAcquire(t, s, k, "owner-"+k, time.Minute)
			}
			mustAcquire(t, s, "jobs/released", "x", time.Minute)
			mustRelease(t, s, "jobs/released", "x")
			mustAcquire(t, s, "jobs/expired", "x", time.Millisecond)
			time.Sleep(10 * time.Millisecond)

			for _, tc := range []struct {
				prefix string
				want   []string
			}{
				{"jobs/", []string{"jobs/%7B", "jobs/a", "jobs/{b}", "jobs/" + string(rune(0x1F512))}},
				{"jobs*", []string{"jobs*"}},
				{"jobs/{", []string{"jobs/{b}"}},
				{"jobs/%", []string{"jobs/%7B"}},
				{"nothing", nil},
				{"", held},
			} {
				got, err := s.List(ctx, tc.prefix)
				if err != nil {
					t.Fatalf("List(%q): %v", tc.prefix, err)
				}
				want := slices.Clone(tc.want)
				slices.Sort(want)
				var keys []string
				for _, l := range got {
					keys = append(keys, l.Key)
					if l.Owner != "owner-"+l.Key || l.Token != tokens[l.Key] || l.ExpiresIn <= 50*time.Second || l.ExpiresIn > time.Minute {
						t.Errorf("List(%q): %+v; want owner owner-%s, token %d, expiring within a minute", tc.prefix, l, l.Key, tokens[l.Key])
					}
				}
				if !slices.Equal(keys, want) {
					t.Errorf("List(%q) = %q, want %q", tc.prefix, keys, want)
				}
			}
		})
	}
}
