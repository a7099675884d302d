// Statements in a goroutine's function, with a context and a job in scope.
package p

import (
	"context"
	"time"

	"github.com/leasehold/leasehold/core"
)

var (
	ctx context.Context
	job *core.Job
)

func _() {
	// BLOCK
}
