// Statements in a function, with a service's GORM database in scope.
package p

import (
	"context"
	"fmt"
	"log"

	"github.com/glebarez/sqlite"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
	"gorm.io/plugin/dbresolver"

	"github.com/leasehold/leasehold/core"
	gormstore "github.com/leasehold/leasehold/drivers/gorm"
)

var (
	ctx        = context.Background()
	dsn        string
	replicaDSN string
	appLogger  logger.Interface
	db         *gorm.DB
	store      *gormstore.Store
)

func _() error {
	// BLOCK
	return nil
}
