// drivers/bun/integration's example file.
package p

import (
	"context"
	"database/sql"
	"fmt"
	"log"
	"strings"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/sqlitedialect"
	_ "modernc.org/sqlite"

	bunstore "github.com/leasehold/leasehold/drivers/bun"
)

// BLOCK
