// Statements in main: the etcd page.
package p

import (
	"context"
	"log"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/leasehold/leasehold/core"
	etcdstore "github.com/leasehold/leasehold/drivers/etcd"
)

func _() {
	// BLOCK
}
