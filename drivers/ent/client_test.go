package entstore_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"

	"entgo.io/ent/dialect"

	"github.com/leasehold/leasehold/core"
	entstore "github.com/leasehold/leasehold/drivers/ent"
	sqlstore "github.com/leasehold/leasehold/drivers/sql"
)

// fakeClient is shaped like a generated ent client with sql/execquery; it
// never runs a statement.
type fakeClient struct{}

func (fakeClient) ExecContext(context.Context, string, ...any) (sql.Result, error) {
	return nil, errors.New("fakeClient")
}

func (fakeClient) QueryContext(context.Context, string, ...any) (*sql.Rows, error) {
	return nil, errors.New("fakeClient")
}

func (fakeClient) Tx(context.Context) (*fakeClientTx, error) { return &fakeClientTx{}, nil }

type fakeClientTx struct{ fakeClient }

func (fakeClientTx) Commit() error   { return nil }
func (fakeClientTx) Rollback() error { return nil }

// fakeTxClient is a client that is a transaction too.
type fakeTxClient struct{ fakeClientTx }

func (fakeTxClient) Tx(context.Context) (*fakeClientTx, error) { return nil, errors.New("nested") }

func TestNewFromClient(t *testing.T) {
	store, err := entstore.NewFromClient(fakeClient{}, dialect.MySQL, sqlstore.WithTable("app_locks"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := store.String(), "entstore (MySQL, table app_locks)"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	if _, err := entstore.NewFromClient(fakeTxClient{}, dialect.MySQL); !errors.Is(err, sqlstore.ErrTransaction) {
		t.Errorf("NewFromClient(a transaction) = %v; want an error matching sqlstore.ErrTransaction", err)
	}
	if _, err := entstore.NewFromClient[*fakeClientTx](nil, dialect.MySQL); !errors.Is(err, core.ErrInvalidArgument) {
		t.Errorf("NewFromClient(nil) = %v; want an error matching core.ErrInvalidArgument", err)
	}
	var unsupported *sqlstore.UnsupportedDialectError
	if _, err := entstore.NewFromClient(fakeClient{}, "oracle"); !errors.As(err, &unsupported) {
		t.Errorf("NewFromClient(oracle) = %v; want a *sqlstore.UnsupportedDialectError", err)
	}
}
