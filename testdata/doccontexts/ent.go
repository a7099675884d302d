// Statements in a function, with an application's generated ent client
// (the ent integration tests' example) in scope.
package p

import (
	"context"
	"database/sql"
	"log"
	"os"
	"slices"

	atlasmigrate "ariga.io/atlas/sql/migrate"
	"entgo.io/ent/dialect"
	entsql "entgo.io/ent/dialect/sql"
	"entgo.io/ent/dialect/sql/schema"

	"github.com/leasehold/leasehold/core"
	entstore "github.com/leasehold/leasehold/drivers/ent"
	"github.com/leasehold/leasehold/drivers/ent/integration/example/ent"
	"github.com/leasehold/leasehold/drivers/ent/integration/example/ent/migrate"
)

var (
	ctx    = context.Background()
	dsn    string
	devURL string
	client *ent.Client
)

func _() error {
	// BLOCK
	return nil
}
