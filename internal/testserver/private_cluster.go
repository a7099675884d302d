package testserver

import (
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// PrivateCluster is a Redis Cluster of the test's own: its masters and
// their replicas, each a private server on loopback (see [Server]) that
// the test may kill and start again by PID.
type PrivateCluster struct {
	Masters  []*Server
	Replicas []*Server
}

// PrivateRedisCluster starts a Redis Cluster of masters masters, each with
// replicas replicas, on free loopback ports, and returns once every node
// sees the cluster ok and every replica is in sync with its master. Nodes time out after 1s (cluster-node-timeout), and
// the cluster serves the slots it can when a master is down
// (cluster-require-full-coverage no), so that one dead master costs only
// its own slots. Without redis-server or redis-cli the test is skipped
// (failed under CI=true).
func PrivateRedisCluster(t testing.TB, masters, replicas int) *PrivateCluster {
	t.Helper()
	cli, err := findBinary("redis-cli")
	if err != nil {
		unavailable(t, "no redis-cli to create a private Redis Cluster: %v", err)
	}
	var nodes []*Server
	for range masters * (1 + replicas) {
		nodes = append(nodes, privateRedis(t, "--cluster-enabled", "yes",
			"--cluster-port", strconv.Itoa(freePort(t)),
			"--cluster-node-timeout", "1000",
			"--cluster-require-full-coverage", "no"))
	}
	args := []string{"--cluster", "create"}
	for _, n := range nodes {
		args = append(args, n.Addr())
	}
	args = append(args, "--cluster-replicas", strconv.Itoa(replicas), "--cluster-yes")
	if out, err := exec.Command(cli, args...).CombinedOutput(); err != nil {
		t.Fatalf("testserver: redis-cli --cluster create: %v\n%s", err, out)
	}
	c := &PrivateCluster{}
	deadline := time.Now().Add(privateStartTimeout)
	for _, n := range nodes {
		for {
			info, err := redisDoAt(n.Addr(), redisAuth{}, "CLUSTER", "INFO")
			if err == nil && strings.Contains(info, "cluster_state:ok") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("testserver: private Redis Cluster node %s not ok within %v: %q, %v", n.Addr(), privateStartTimeout, info, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
		info, err := redisDoAt(n.Addr(), redisAuth{}, "INFO", "replication")
		if err != nil {
			t.Fatalf("testserver: INFO replication of %s: %v", n.Addr(), err)
		}
		if strings.Contains(info, "role:master") {
			c.Masters = append(c.Masters, n)
		} else {
			c.Replicas = append(c.Replicas, n)
		}
	}
	if len(c.Masters) != masters {
		t.Fatalf("testserver: private Redis Cluster has %d masters, want %d", len(c.Masters), masters)
	}
	// A replica acknowledges writes (WAIT) only once its first sync is
	// done: wait for it, so that a test's first write is not refused.
	for _, r := range c.Replicas {
		for {
			info, err := redisDoAt(r.Addr(), redisAuth{}, "INFO", "replication")
			if err == nil && strings.Contains(info, "master_link_status:up") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("testserver: private Redis Cluster replica %s not in sync within %v: %q, %v", r.Addr(), privateStartTimeout, info, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return c
}

// URL returns a redis:// URL of the cluster's first master, from which a
// cluster client finds the others.
func (c *PrivateCluster) URL() string { return c.Masters[0].DSN }

// Addrs returns the addresses of the cluster's masters.
func (c *PrivateCluster) Addrs() []string {
	out := make([]string, len(c.Masters))
	for i, m := range c.Masters {
		out[i] = m.Addr()
	}
	return out
}

// String lists the nodes, for messages.
func (c *PrivateCluster) String() string {
	return fmt.Sprintf("Redis Cluster, masters %v", c.Addrs())
}
