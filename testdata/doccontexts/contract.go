// Declarations beside the core's types: the store contract as the core
// declares it.
package p

import (
	"context"
	"time"

	"github.com/leasehold/leasehold/core"
)

type Lease = core.Lease

var _ context.Context
var _ time.Duration

// BLOCK
