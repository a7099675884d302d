// Statements in a function, with an instance's Locks, a robfig/cron
// scheduler and the jobs of docs/jobs.md in scope.
package p

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/go-co-op/gocron/v2"
	"github.com/robfig/cron/v3"

	"github.com/leasehold/leasehold/adapters/cronguard"
	"github.com/leasehold/leasehold/adapters/gocronguard"
	"github.com/leasehold/leasehold/core"
)

var (
	store          core.LockStore
	locks          *core.Locks
	c              *cron.Cron
	invoices       *core.Job
	sendInvoices   func(ctx context.Context) error
	exportInvoices func(ctx context.Context, token int64) error
	compactTables  func()
	cleanup, warm  cron.Job
)

func _() error {
	// BLOCK
	return nil
}
