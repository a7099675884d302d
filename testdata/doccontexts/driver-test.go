// A driver's test file, with its test database helpers.
package p

import (
	"database/sql"
	"testing"

	"github.com/leasehold/leasehold/conformance"
	"github.com/leasehold/leasehold/core"
)

func openTestDatabase(t testing.TB) *sql.DB               { return nil }
func newClientOf(t testing.TB, db *sql.DB) core.LockStore { return nil }

var _ = conformance.Run

// BLOCK
