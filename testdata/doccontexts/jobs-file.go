// A file of a service, with its store and database in scope.
package p

import (
	"context"
	"database/sql"
	"errors"
	"log"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/leasehold/leasehold/core"
)

var (
	store  core.LockStore
	db     *sql.DB
	lastID int64
)

var _ context.Context
var _ = errors.New
var _ = log.Print
var _ = os.Interrupt
var _ = signal.Notify
var _ = syscall.SIGTERM
var _ time.Duration
var _ = cron.New
var _ = core.New

// BLOCK
