package shop

import (
	"context"
	"database/sql"
	"time"

	"github.com/leasehold/leasehold/core"
)

// MigrateOneAtATime runs Migrate while holding the lock MigrateKey (waiting
// up to a minute for it), so that instances started together create the
// tables one at a time. Run together, PostgreSQL fails all but one of their
// CREATE TABLE IF NOT EXISTS statements on a table ("duplicate key value
// violates unique constraint pg_type_typname_nsp_index"); one at a time,
// the later instances find the tables there.
func MigrateOneAtATime(ctx context.Context, db *sql.DB, locks *core.Locks) error {
	return locks.WithLock(ctx, MigrateKey, func(ctx context.Context) error {
		return Migrate(ctx, db)
	}, core.WithWait(time.Minute))
}
