// Statements in a function, with a bun store in scope.
package p

import (
	"context"

	"github.com/uptrace/bun/migrate"

	bunstore "github.com/leasehold/leasehold/drivers/bun"
)

var (
	ctx   = context.Background()
	store *bunstore.Store
)

func _() error {
	// BLOCK
	return nil
}
