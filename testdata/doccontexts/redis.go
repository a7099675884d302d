// Statements in a function that returns an error: the Redis pages.
package p

import (
	"github.com/redis/rueidis"

	"github.com/leasehold/leasehold/core"
	rueidisstore "github.com/leasehold/leasehold/drivers/rueidis"
)

func _() error {
	// BLOCK
	return nil
}
