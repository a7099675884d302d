package rueidisstore

import (
	"context"
	"maps"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/leasehold/leasehold/core/coretest"
)

// unusedClient is a rueidis.Client that no cell below reaches: any call
// would panic on the nil embedded interface.
type unusedClient struct{ rueidis.Client }

// TestBadHandles walks New and the store's entry points with typed nil
// handles, nil options, nil contexts and the zero value.
func TestBadHandles(t *testing.T) {
	s, err := New(unusedClient{})
	if err != nil {
		t.Fatal(err)
	}
	calls := coretest.BadHandles{
		"New(nil)":                      func() error { _, err := New(nil); return err },
		"New(typed nil *unusedClient)":  func() error { _, err := New((*unusedClient)(nil)); return err },
		"New(nil option)":               func() error { _, err := New(unusedClient{}, nil); return err },
		"New(WithPrefix(\"\"))":         func() error { _, err := New(unusedClient{}, WithPrefix("")); return err },
		"New(WithReplicas(1, 0))":       func() error { _, err := New(unusedClient{}, WithReplicas(1, 0)); return err },
		"New(WithFloorRetention(-1ms))": func() error { _, err := New(unusedClient{}, WithFloorRetention(-time.Millisecond)); return err },
		"ResetTokens(nil ctx)":          func() error { return s.ResetTokens(nilContext()) },
	}
	maps.Copy(calls, coretest.StoreBadHandles("Store", s, &Store{}))
	coretest.CheckBadHandles(t, calls)
}

// nilContext is a nil context.Context, which the cells pass on purpose.
func nilContext() context.Context { return nil }
