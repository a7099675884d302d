// Declarations of a driver on the SQL engine.
package p

import (
	"context"
	"database/sql"
	"strconv"
	"strings"

	sqlstore "github.com/leasehold/leasehold/drivers/sql"
)

type Row = sqlstore.Row

var _ context.Context
var _ sql.Result
var _ = strconv.Itoa
var _ = strings.Builder{}

// BLOCK
