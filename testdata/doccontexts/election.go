// Statements in a function, with an instance's Locks and store in scope.
package p

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/leasehold/leasehold/core"
)

var (
	store core.LockStore
	locks *core.Locks
	relay interface {
		Run(ctx context.Context, token int64)
	}
)

func _() error {
	// BLOCK
	return nil
}
