// A file of an application's bun migrations package.
package p

import (
	"github.com/uptrace/bun/migrate"

	bunstore "github.com/leasehold/leasehold/drivers/bun"
)

var Migrations = migrate.NewMigrations()

var _ = bunstore.MigrationFuncs

// BLOCK
