package testserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	dockercontainer "github.com/moby/moby/api/types/container"
	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/wait"
)

// EnvRedisCluster names a running Redis Cluster: its seed addresses, comma
// separated ("127.0.0.1:7001,127.0.0.1:7002"), or a URL of the form
// rueidis.ParseURL takes ("redis://user:pass@host1:7001?addr=host2:7002").
const EnvRedisCluster = "LEASEHOLD_TEST_REDIS_CLUSTER"

var redisClusterContainer container

// RedisCluster returns the URL of a Redis Cluster, in the form
// rueidis.ParseURL takes (redis://host1:port1?addr=host2:port2&addr=...),
// and a key prefix of the test's own ("lh_<random>:"). Keys under the prefix
// are deleted from every master when t ends. The cluster comes from
// LEASEHOLD_TEST_REDIS_CLUSTER, else from a container (three masters, on
// the host's network so that the addresses the nodes announce are
// reachable), else the test is skipped (fails under CI=true).
func RedisCluster(t testing.TB) (clusterURL, prefix string) {
	t.Helper()
	raw := os.Getenv(EnvRedisCluster)
	if raw == "" {
		raw = fromContainer(t, &redisClusterContainer, "Redis Cluster", EnvRedisCluster, startRedisCluster)
	}
	clusterURL, err := redisClusterURL(raw)
	if err != nil {
		t.Fatalf("testserver: %s: %v", EnvRedisCluster, err)
	}
	masters, auth, err := clusterMasters(clusterURL)
	if err != nil {
		t.Fatalf("testserver: Redis Cluster at %s: %v", redactURL(clusterURL), err)
	}
	prefix = randomName("lh_") + ":"
	t.Cleanup(func() {
		for _, m := range masters {
			if _, err := redisDoAt(m, auth, "EVAL", deleteKeysScript, "0", prefix+"*"); err != nil {
				t.Errorf("testserver: delete Redis keys %s* on %s: %v", prefix, m, err)
			}
		}
	})
	return clusterURL, prefix
}

// redisClusterURL turns the variable's value into the URL form.
func redisClusterURL(raw string) (string, error) {
	if strings.Contains(raw, "://") {
		u, err := url.Parse(raw)
		if err != nil {
			return "", err
		}
		if u.Scheme != "redis" || u.Host == "" {
			return "", errors.New("want redis://host:port?addr=host:port&addr=..., or host:port,host:port,...")
		}
		return raw, nil
	}
	var addrs []string
	for _, a := range strings.Split(raw, ",") {
		if a = strings.TrimSpace(a); a != "" {
			addrs = append(addrs, redisAddr(a))
		}
	}
	if len(addrs) == 0 {
		return "", errors.New("no seed address")
	}
	q := url.Values{"addr": addrs[1:]}
	u := url.URL{Scheme: "redis", Host: addrs[0], RawQuery: q.Encode()}
	return u.String(), nil
}

// clusterMasters waits until the cluster of clusterURL says
// cluster_state:ok, and returns the addresses of its masters.
func clusterMasters(clusterURL string) ([]string, redisAuth, error) {
	seed, auth, err := parseRedisURL(clusterURL)
	if err != nil {
		return nil, auth, err
	}
	u, _ := url.Parse(clusterURL)
	seeds := append([]string{seed}, u.Query()["addr"]...)
	auth.db = "" // a cluster has database 0 only
	deadline := time.Now().Add(setupTimeout)
	for {
		var errs []error
		for _, s := range seeds {
			masters, err := readyMasters(s, auth)
			if err == nil {
				return masters, auth, nil
			}
			errs = append(errs, fmt.Errorf("%s: %w", s, err))
		}
		if time.Now().After(deadline) {
			return nil, auth, errors.Join(errs...)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// readyMasters asks the node at addr for the cluster's state and masters.
func readyMasters(addr string, auth redisAuth) ([]string, error) {
	info, err := redisDoAt(addr, auth, "CLUSTER", "INFO")
	if err != nil {
		return nil, err
	}
	if !strings.Contains(info, "cluster_state:ok") {
		return nil, errors.New("cluster_state is not ok yet")
	}
	nodes, err := redisDoAt(addr, auth, "CLUSTER", "NODES")
	if err != nil {
		return nil, err
	}
	// <id> <ip:port@cport[,hostname]> <flags> <master> <ping> <pong> <epoch> <link> <slot>...
	var masters []string
	for _, line := range strings.Split(nodes, "\n") {
		f := strings.Fields(line)
		if len(f) < 9 || !strings.Contains(","+f[2]+",", ",master,") || strings.Contains(f[2], "fail") {
			continue
		}
		hostPort, _, _ := strings.Cut(f[1], "@")
		masters = append(masters, hostPort)
	}
	if len(masters) == 0 {
		return nil, errors.New("no master serves a slot")
	}
	return masters, nil
}

// startRedisCluster starts three cluster-enabled redis-server processes in
// one container on the host's network, on free loopback ports, and joins
// them into a cluster: a cluster on a bridge network would announce
// addresses the tests cannot reach.
func startRedisCluster(ctx context.Context) (testcontainers.Container, string, error) {
	// Six listeners open at once: distinct ports, free a moment ago, closed
	// before the nodes bind them. Each node takes two: its own, and its
	// cluster bus port (by default its own + 10000, which may not exist).
	var ports []string
	var listeners []net.Listener
	for range 6 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			break
		}
		listeners = append(listeners, l)
		_, port, _ := net.SplitHostPort(l.Addr().String())
		ports = append(ports, port)
	}
	for _, l := range listeners {
		l.Close()
	}
	if len(ports) < 6 {
		return nil, "", errors.New("no six free loopback ports")
	}
	// The arguments are pairs: a node's port, then its bus port.
	script := `set -e
cd /tmp
nodes=""
while [ $# -gt 0 ]; do
  redis-server --bind 127.0.0.1 --port "$1" --cluster-enabled yes --cluster-port "$2" \
    --cluster-config-file "nodes-$1.conf" --save "" --appendonly no --daemonize yes
  until redis-cli -p "$1" ping >/dev/null 2>&1; do sleep 0.1; done
  nodes="$nodes 127.0.0.1:$1"
  shift 2
done
redis-cli --cluster create $nodes --cluster-yes
echo "leasehold: cluster created"
exec sleep 2147483647`
	ctr, err := testcontainers.Run(ctx, image("LEASEHOLD_TEST_REDIS_IMAGE", RedisImage),
		testcontainers.WithEntrypoint("sh", "-c", script, "sh"),
		testcontainers.WithCmd(ports...),
		testcontainers.WithHostConfigModifier(func(hc *dockercontainer.HostConfig) { hc.NetworkMode = "host" }),
		testcontainers.WithWaitStrategy(wait.ForLog("leasehold: cluster created").WithStartupTimeout(2*time.Minute)),
	)
	if err != nil {
		return containerOrNil(ctr), "", err
	}
	var addrs []string
	for i := 0; i < len(ports); i += 2 {
		addrs = append(addrs, net.JoinHostPort("127.0.0.1", ports[i]))
	}
	return ctr, strings.Join(addrs, ","), nil
}
