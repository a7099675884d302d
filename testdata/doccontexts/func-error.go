// Statements in a function that returns an error, with a context and a
// data source name in scope.
package p

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/leasehold/leasehold/core"
	sqlstore "github.com/leasehold/leasehold/drivers/sql"
	sqlitestore "github.com/leasehold/leasehold/drivers/sqlite"
)

var (
	ctx = context.Background()
	dsn string
)

func _() error {
	// BLOCK
	return nil
}
