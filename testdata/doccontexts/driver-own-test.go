// A driver's own test file, in the driver's package: its constructor,
// its store type and a client that needs no server.
package p

import (
	"maps"
	"testing"

	"github.com/leasehold/leasehold/core"
	"github.com/leasehold/leasehold/core/coretest"
)

type Client struct{}
type Option func(*Store)
type Store struct{ core.LockStore }

func New(c *Client, opts ...Option) (*Store, error) { return nil, nil }
func testClient(t testing.TB) *Client               { return nil }

var _ = maps.Copy[coretest.BadHandles, coretest.BadHandles]
var _ coretest.BadHandles

// BLOCK
