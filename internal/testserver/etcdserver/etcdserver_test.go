package etcdserver_test

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/leasehold/leasehold/internal/testserver/etcdserver"
)

func client(t *testing.T, eps []string) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: eps, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	return cli
}

// TestClusterSurvivesLeaderKill: a three-member cluster elects a new
// leader when its leader is killed, keeps what was written, and takes the
// member back.
func TestClusterSurvivesLeaderKill(t *testing.T) {
	c := etcdserver.Start(t, 3)
	cli := client(t, c.Endpoints())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := cli.Put(ctx, "k", "v"); err != nil {
		t.Fatal(err)
	}
	old, err := c.Leader(10 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	c.Kill(old)
	now, err := c.Leader(10 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if now == old {
		t.Fatalf("member %d still leads after it was killed", old)
	}
	resp, err := cli.Get(ctx, "k")
	if err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "v" {
		t.Fatalf("after the leader's kill, Get = %v, %v; want the value written before", resp, err)
	}
	if err := c.Restart(old); err != nil {
		t.Fatal(err)
	}
	solo := client(t, []string{c.Endpoint(old)})
	if resp, err := solo.Get(ctx, "k"); err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("restarted member: Get = %v, %v", resp, err)
	}
}

// TestStartProcess: a member in a process of its own serves writes, and
// is gone once its test has ended.
func TestStartProcess(t *testing.T) {
	var eps []string
	t.Run("serve", func(t *testing.T) {
		eps = etcdserver.StartProcess(t)
		cli := client(t, eps)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := cli.Put(ctx, "k", "v"); err != nil {
			t.Fatal(err)
		}
		resp, err := cli.Get(ctx, "k")
		if err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "v" {
			t.Fatalf("Get after Put: %v, %v", resp, err)
		}
	})
	host := strings.TrimPrefix(eps[0], "http://")
	if c, err := net.DialTimeout("tcp", host, time.Second); err == nil {
		c.Close()
		t.Fatalf("the member process still serves %s after its test ended", host)
	}
}
