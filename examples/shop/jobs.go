package shop

import (
	"context"

	"github.com/leasehold/leasehold/core"
)

// The keys of the shop's jobs, of its election and of its migration. They
// name the locks in the store, so every instance, old and new, must use the
// same ones: set them explicitly rather than let them default to a
// function's name, which a refactoring changes.
const (
	ExportJobKey    = "invoices:nightly-export"
	ReconcileJobKey = "inventory:stock-reconciliation"
	FeedKey         = "inventory:warehouse-feed"
	MigrateKey      = "shop:migrate"
)

// Jobs are the shop's scheduled jobs, under leasehold's guards. Call
// [core.Job.Func] from a scheduler, or [core.Job.Run] to run one by hand.
type Jobs struct {
	Export    *core.Job
	Reconcile *core.Job
}

// NewJobs puts the shop's jobs under guards on locks: each runs on one
// instance and never overlaps itself.
func (s *Shop) NewJobs(locks *core.Locks) (*Jobs, error) {
	export, err := locks.Job(s.exportJob,
		core.WithJobKey(ExportJobKey),
		core.OnOneInstance(),
		core.WithoutOverlapping(),
	)
	if err != nil {
		return nil, err
	}
	reconcile, err := locks.Job(s.ReconcileStock,
		core.WithJobKey(ReconcileJobKey),
		core.OnOneInstance(),
		core.WithoutOverlapping(),
	)
	if err != nil {
		return nil, err
	}
	return &Jobs{Export: export, Reconcile: reconcile}, nil
}

// exportJob is ExportInvoices as a job function.
func (s *Shop) exportJob(ctx context.Context) error {
	_, err := s.ExportInvoices(ctx)
	return err
}
