package entstore

import (
	"context"
	"fmt"

	entsql "entgo.io/ent/dialect/sql"

	"github.com/leasehold/leasehold/core"
	sqlstore "github.com/leasehold/leasehold/drivers/sql"
)

// Client is what an ent client generated with the sql/execquery feature
// offers (go run entgo.io/ent/cmd/ent generate --feature sql/execquery):
// raw statements on the client's driver, and transactions of type T (the
// generated *ent.Tx).
type Client[T ClientTx] interface {
	entsql.ExecQuerier // ExecContext, QueryContext
	Tx(ctx context.Context) (T, error)
}

// ClientTx is a transaction of a [Client]: the generated *ent.Tx.
type ClientTx interface {
	entsql.ExecQuerier // ExecContext, QueryContext
	Commit() error
	Rollback() error
}

// NewFromClient returns a Store that runs its statements through c, the
// application's generated ent client, for code that is handed the client
// and not the driver it was built from. The statements still go through
// the client's driver and whatever wraps it. dialectName is the name the
// driver was opened with (dialect.Postgres, dialect.MySQL,
// dialect.SQLite), since a client does not tell it. The type parameter is
// inferred:
//
//	store, err := entstore.NewFromClient(client, dialect.Postgres)
//
// Give it the application's client, never the client of a transaction
// (tx.Client()): its statements would run in that transaction, and unlike
// [New], NewFromClient cannot tell the two apart. Prefer New wherever the
// driver is at hand.
func NewFromClient[T ClientTx](c Client[T], dialectName string, opts ...sqlstore.Option) (*Store, error) {
	if err := core.ValidateHandle("Client", c); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if _, ok := c.(interface{ Commit() error }); ok {
		return nil, fmt.Errorf("%s: %T: %w", name, c, sqlstore.ErrTransaction)
	}
	d, err := sqlstore.DialectNamed(dialectName)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return newStore(clientTransactor[T]{clientExecutor{c}, c}, d, opts)
}
