// A store's test file.
package p

import (
	"context"
	"testing"
	"time"

	"github.com/leasehold/leasehold/conformance"
	"github.com/leasehold/leasehold/core"
)

var _ context.Context
var _ testing.TB
var _ time.Duration
var _ = conformance.Run
var _ = core.New

// BLOCK
