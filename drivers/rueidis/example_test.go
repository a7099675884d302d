package rueidisstore_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/redis/rueidis"

	"github.com/leasehold/leasehold/core"
	rueidisstore "github.com/leasehold/leasehold/drivers/rueidis"
)

// Locks on the application's own rueidis client. (Compile-only: it needs a
// Redis server.)
func Example() {
	client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{"127.0.0.1:6379"}})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	store, err := rueidisstore.New(client, rueidisstore.WithPrefix("billing:locks:"))
	if err != nil {
		log.Fatal(err)
	}
	locks, err := core.New(store)
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	defer locks.Close(ctx)

	err = locks.WithLock(ctx, "invoice-export", func(ctx context.Context) error {
		token := core.LockFromContext(ctx).Token()
		fmt.Println("exporting with fencing token", token)
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
}

// A Redis Cluster: give rueidis some of its nodes; it finds the others. Each
// lock's keys live in one slot, and locks spread over the slots.
func ExampleNew_cluster() {
	client, err := rueidis.NewClient(rueidis.ClientOption{
		InitAddress: []string{"redis-1:6379", "redis-2:6379", "redis-3:6379"},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	store, err := rueidisstore.New(client)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(store) // rueidisstore (cluster, prefix "leasehold:")
}

// An acquisition that waits until a replica has it, or is handed back.
func ExampleWithReplicas() {
	client, err := rueidis.NewClient(rueidis.ClientOption{
		InitAddress: []string{"sentinel-1:26379", "sentinel-2:26379"},
		Sentinel:    rueidis.SentinelOption{MasterSet: "locks"},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	store, err := rueidisstore.New(client, rueidisstore.WithReplicas(1, 100*time.Millisecond))
	if err != nil {
		log.Fatal(err)
	}
	token, ok, err := store.Acquire(context.Background(), "leader", "node-a/1", 10*time.Second)
	fmt.Println(token, ok, err)
}
