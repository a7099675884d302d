package shop

import (
	"context"

	"github.com/leasehold/leasehold/core"
)

// StartFeed makes this instance a candidate for holding the warehouse's
// alert feed, which accepts one connection per shop. The leader connects and
// holds the feed for as long as it leads. When it dies, another candidate
// takes over within about ttl + ttl/3; when it shuts down, at the others'
// next campaign.
func (s *Shop) StartFeed(locks *core.Locks) (*core.Election, error) {
	return locks.Elect(FeedKey, core.Campaign{
		OnAcquired: func(lead *core.Lock) error {
			s.Log.Info("connecting to the warehouse feed", "token", lead.Token())
			go s.holdFeed(lead)
			return nil
		},
		OnLost: func(err error) {
			s.Log.Info("no longer holding the warehouse feed", "err", err)
		},
	})
}

// holdFeed keeps the feed open for as long as lead is held.
func (s *Shop) holdFeed(lead *core.Lock) {
	ctx := lead.Context() // ends when the leadership does
	err := s.Warehouse.Alerts(ctx, func(a Alert) {
		s.Log.Warn("low stock", "product", a.ProductID, "in_stock", a.InStock, "token", lead.Token())
	})
	if ctx.Err() == nil {
		// The connection failed while this instance still leads: step down,
		// and a candidate (this one, maybe) reconnects at its next campaign.
		s.Log.Error("warehouse feed dropped; stepping down", "err", err)
		_ = lead.Release(context.Background())
	}
}
