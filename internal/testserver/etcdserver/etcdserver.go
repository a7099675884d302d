// Package etcdserver runs real etcd members for tests
// (go.etcd.io/etcd/server/v3/embed): one member in a process of its own for
// the conformance kit and the benchmarks ([StartProcess]), or a cluster of
// several in the test's own process, on loopback, for fault tests, whose
// members can be stopped hard, started again and cut off ([Start]). It is
// a module of its own, so that etcd's server and its dependencies reach
// only the tests that use it, not every user of internal/testserver.
//
// [Endpoints] follows the LEASEHOLD_TEST_* rule of internal/testserver: an
// external server named by LEASEHOLD_TEST_ETCD, else a member process.
package etcdserver

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
)

// EnvEtcd names a running etcd server for the tests: its client endpoints,
// comma-separated (http://127.0.0.1:2379 or 127.0.0.1:2379,...).
const EnvEtcd = "LEASEHOLD_TEST_ETCD"

// startTimeout bounds a member's start, and a cluster's first election.
const startTimeout = 30 * time.Second

// Endpoints returns the client endpoints of an etcd server for t: the
// external one named by LEASEHOLD_TEST_ETCD, or a single member started
// for t in a process of its own (see [StartProcess]) and stopped with it.
func Endpoints(t testing.TB) []string {
	t.Helper()
	if env := os.Getenv(EnvEtcd); env != "" {
		return strings.Split(env, ",")
	}
	return StartProcess(t)
}

// Cluster is a set of embedded etcd members on loopback, started by
// [Start] and stopped when the test ends.
type Cluster struct {
	t       testing.TB
	mu      sync.Mutex
	members []*member
}

// member is one member's fixed configuration and, while it runs, its
// server.
type member struct {
	name, dir       string
	peerURL, client url.URL
	etcd            *embed.Etcd
}

// Start starts a cluster of n embedded members on free loopback ports,
// waits until it has a leader, and stops it when t ends.
func Start(t testing.TB, n int) *Cluster {
	t.Helper()
	c := &Cluster{t: t}
	var initial []string
	for i := range n {
		m := &member{name: fmt.Sprintf("m%d", i), dir: t.TempDir(), peerURL: freeURL(t), client: freeURL(t)}
		c.members = append(c.members, m)
		initial = append(initial, m.name+"="+m.peerURL.String())
	}
	t.Cleanup(c.stopAll)
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i, m := range c.members {
		wg.Go(func() { errs[i] = c.start(m, strings.Join(initial, ","), embed.ClusterStateFlagNew) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatalf("etcdserver: %v", err)
		}
	}
	return c
}

// freeURL returns an http URL on a loopback port that was free a moment
// ago. etcd needs its peer ports before it starts, to name them in the
// initial cluster.
func freeURL(t testing.TB) url.URL {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("etcdserver: free port: %v", err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return url.URL{Scheme: "http", Host: addr}
}

// start runs member m and waits until it serves clients.
func (c *Cluster) start(m *member, initial, state string) error {
	e, err := run(m, initial, state)
	if err != nil {
		return err
	}
	c.mu.Lock()
	m.etcd = e
	c.mu.Unlock()
	return nil
}

// run starts member m of the cluster initial and waits until it serves
// clients.
func run(m *member, initial, state string) (*embed.Etcd, error) {
	cfg := embed.NewConfig()
	cfg.Name = m.name
	cfg.Dir = m.dir
	cfg.ListenPeerUrls = []url.URL{m.peerURL}
	cfg.AdvertisePeerUrls = []url.URL{m.peerURL}
	cfg.ListenClientUrls = []url.URL{m.client}
	cfg.AdvertiseClientUrls = []url.URL{m.client}
	cfg.InitialCluster = initial
	cfg.InitialClusterToken = "leasehold-test"
	cfg.ClusterState = state
	cfg.LogLevel = "error"
	cfg.UnsafeNoFsync = true // test data in a temporary directory
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, fmt.Errorf("start member %s: %w", m.name, err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		e.Close()
		return nil, fmt.Errorf("member %s: %w", m.name, err)
	case <-time.After(startTimeout):
		e.Close()
		return nil, fmt.Errorf("member %s not ready after %v", m.name, startTimeout)
	}
	return e, nil
}

// Serve starts a single member, configured as [Start] configures one, with
// its data in dir and its client and peer URLs on the loopback addresses
// given ("127.0.0.1:2379"), and returns it once it serves clients; the
// caller closes it. cmd/etcdmember runs it in a process of its own, for
// benchmarks whose CPU and allocation figures must not count the server's.
func Serve(dir, clientAddr, peerAddr string) (*embed.Etcd, error) {
	m := &member{name: "m0", dir: dir, peerURL: url.URL{Scheme: "http", Host: peerAddr}, client: url.URL{Scheme: "http", Host: clientAddr}}
	return run(m, m.name+"="+m.peerURL.String(), embed.ClusterStateFlagNew)
}

// Endpoints returns the client URLs of every member, running or not, as
// a client of the whole cluster would be configured.
func (c *Cluster) Endpoints() []string {
	eps := make([]string, len(c.members))
	for i, m := range c.members {
		eps[i] = m.client.String()
	}
	return eps
}

// Endpoint returns member i's client URL.
func (c *Cluster) Endpoint(i int) string { return c.members[i].client.String() }

// Size returns the number of members.
func (c *Cluster) Size() int { return len(c.members) }

// Leader returns the index of the member that is the leader, as the
// running members see it, waiting up to timeout for one to be elected.
func (c *Cluster) Leader(timeout time.Duration) (int, error) {
	deadline := time.Now().Add(timeout)
	for {
		c.mu.Lock()
		for i, m := range c.members {
			if m.etcd != nil && m.etcd.Server.Leader() == m.etcd.Server.MemberID() {
				c.mu.Unlock()
				return i, nil
			}
		}
		c.mu.Unlock()
		if time.Now().After(deadline) {
			return -1, fmt.Errorf("etcdserver: no leader after %v", timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Kill stops member i hard, as a crash would: its raft loop stops without
// handing leadership over, then its connections close.
func (c *Cluster) Kill(i int) {
	c.mu.Lock()
	e := c.members[i].etcd
	c.members[i].etcd = nil
	c.mu.Unlock()
	if e == nil {
		return
	}
	e.Server.HardStop()
	e.Close()
}

// Restart starts member i again on its data, after [Cluster.Kill].
func (c *Cluster) Restart(i int) error {
	var initial []string
	for _, m := range c.members {
		initial = append(initial, m.name+"="+m.peerURL.String())
	}
	m := c.members[i]
	if err := c.start(m, strings.Join(initial, ","), embed.ClusterStateFlagExisting); err != nil {
		return fmt.Errorf("etcdserver: %w", err)
	}
	return nil
}

// Cut drops every raft message between member i and each other running
// member, both ways ((*etcdserver.EtcdServer).CutPeer on both sides): a
// partition of member i as far as consensus goes. Member i keeps serving
// its clients. Lease renewals are not raft messages: a follower forwards
// them to its leader over plain HTTP, which Cut leaves alone, so they
// still reach the leader until member i has lost it, an election timeout
// after the cut (see [Cluster.LeaderSeenBy]).
func (c *Cluster) Cut(i int) { c.setCut(i, true) }

// Mend ends [Cluster.Cut]: member i and the others exchange raft messages
// again.
func (c *Cluster) Mend(i int) { c.setCut(i, false) }

func (c *Cluster) setCut(i int, cut bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	lone := c.members[i].etcd
	if lone == nil {
		return
	}
	for j, m := range c.members {
		if j == i || m.etcd == nil {
			continue
		}
		if cut {
			lone.Server.CutPeer(m.etcd.Server.MemberID())
			m.etcd.Server.CutPeer(lone.Server.MemberID())
		} else {
			lone.Server.MendPeer(m.etcd.Server.MemberID())
			m.etcd.Server.MendPeer(lone.Server.MemberID())
		}
	}
}

// LeaderSeenBy returns the index of the member that running member i
// takes for the leader (i itself if it leads), or -1 if it knows none
// (or only one that is not running), or is not running itself.
func (c *Cluster) LeaderSeenBy(i int) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.members[i].etcd
	if e == nil {
		return -1
	}
	lead := e.Server.Leader()
	for j, m := range c.members {
		if m.etcd != nil && m.etcd.Server.MemberID() == lead {
			return j
		}
	}
	return -1
}

// stopAll stops every running member.
func (c *Cluster) stopAll() {
	for i := range c.members {
		c.Kill(i)
	}
}
