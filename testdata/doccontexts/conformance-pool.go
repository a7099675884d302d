// Statements in a store's test, with the server's DSN: the kit's pool sizing.
package p

import (
	"database/sql"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/leasehold/leasehold/conformance"
)

func _(t *testing.T, dsn string) {
	// BLOCK
	_ = db
}
