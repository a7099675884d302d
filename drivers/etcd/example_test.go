package etcdstore_test

import (
	"context"
	"log"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/leasehold/leasehold/core"
	etcdstore "github.com/leasehold/leasehold/drivers/etcd"
)

// Locks on an etcd cluster, through the application's own client. The
// example needs a running etcd, so it has no output to check.
func Example() {
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   []string{"127.0.0.1:2379", "127.0.0.1:22379", "127.0.0.1:32379"},
		DialTimeout: 5 * time.Second,
	})
	if err != nil {
		log.Fatal(err)
	}
	defer cli.Close()

	store := etcdstore.NewWithOptions(cli, etcdstore.Options{Prefix: "shop/locks/"})
	locks, err := core.New(store, core.WithDefaultTTL(30*time.Second))
	if err != nil {
		log.Fatal(err)
	}
	defer locks.Close(context.Background())

	err = locks.WithLock(context.Background(), "nightly-report", func(ctx context.Context) error {
		// ctx ends if the lock is lost; pass it to every call that writes.
		return nil
	})
	if err != nil {
		log.Print(err)
	}
}
