package etcdstore_test

import (
	"maps"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/leasehold/leasehold/core/coretest"
	etcdstore "github.com/leasehold/leasehold/drivers/etcd"
)

// TestBadHandles walks the store's entry points with nil contexts, and
// core.New with stores on a nil client, on a zero client, and a zero Store.
func TestBadHandles(t *testing.T) {
	// Connects lazily: no cell below reaches a server.
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{"127.0.0.1:1"}, DialTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	calls := coretest.StoreBadHandles("Store", etcdstore.New(cli), &etcdstore.Store{})
	maps.Copy(calls, coretest.StoreBadHandles("New(nil)", etcdstore.New(nil), etcdstore.New(nil)))
	maps.Copy(calls, coretest.StoreBadHandles("New(&clientv3.Client{})", etcdstore.New(&clientv3.Client{}), nil))
	coretest.CheckBadHandles(t, calls)
}
