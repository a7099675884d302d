package testserver

import (
	"strings"
	"testing"
)

// TestRedisCluster: the cluster's URL reaches a node, and the cleanup
// deletes the test's keys from every master, whatever their slot.
func TestRedisCluster(t *testing.T) {
	var prefix string
	var masters []string
	t.Run("use", func(t *testing.T) {
		var url string
		url, prefix = RedisCluster(t)
		var err error
		if masters, _, err = clusterMasters(url); err != nil || len(masters) < 2 {
			t.Fatalf("masters %v, %v; want several", masters, err)
		}
		for _, m := range masters {
			// A key this master serves: ask it which slot it would MOVE.
			for i := 0; ; i++ {
				key := prefix + strings.Repeat("k", i)
				if _, err := redisDoAt(m, redisAuth{}, "SET", key, "v"); err == nil {
					break
				} else if !strings.HasPrefix(err.Error(), "MOVED") {
					t.Fatal(err)
				}
			}
		}
	})
	for _, m := range masters {
		if n, err := redisDoAt(m, redisAuth{}, "EVAL", "return #redis.call('KEYS', ARGV[1])", "0", prefix+"*"); err != nil || n != ":0" {
			t.Errorf("keys left under %s on %s: %s, %v", prefix, m, n, err)
		}
	}
}

func TestRedisClusterURL(t *testing.T) {
	for in, want := range map[string]string{
		"127.0.0.1:7001,127.0.0.1:7002, 127.0.0.1:7003": "redis://127.0.0.1:7001?addr=127.0.0.1%3A7002&addr=127.0.0.1%3A7003",
		"db1":                             "redis://db1:6379",
		"redis://u:p@h:7001?addr=h2:7002": "redis://u:p@h:7001?addr=h2:7002",
	} {
		if got, err := redisClusterURL(in); err != nil || got != want {
			t.Errorf("redisClusterURL(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", " , ", "rediss://h:1", "redis://"} {
		if got, err := redisClusterURL(bad); err == nil {
			t.Errorf("redisClusterURL(%q) = %q, want an error", bad, got)
		}
	}
}
