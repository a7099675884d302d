package pgxstore

import (
	"context"
	"database/sql"
	sqldriver "database/sql/driver"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"

	sqlstore "github.com/leasehold/leasehold/drivers/sql"
)

// unlistenTimeout bounds the UNLISTEN that cleans a connection before it
// goes back to its pool.
const unlistenTimeout = 2 * time.Second

// PoolListener returns a [sqlstore.Listener] that listens on one
// connection of pool, held while the store has waiters (and 1s more).
// [New] gives a store on a *pgxpool.Pool one already; pass
// [sqlstore.WithoutNotifications] to New to go without.
func PoolListener(pool *pgxpool.Pool) sqlstore.Listener { return poolListener{pool} }

type poolListener struct{ pool *pgxpool.Pool }

func (l poolListener) Listen(ctx context.Context, channel string, ready func(), notify func(string)) error {
	conn, err := l.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release() // a closed connection is dropped by the pool
	return listen(ctx, conn.Conn(), channel, ready, notify)
}

// DBListener returns a [sqlstore.Listener] for a store over database/sql
// with pgx's stdlib driver (sqlstore.New(db, sqlstore.Postgres,
// sqlstore.WithListener(pgxstore.DBListener(db)))): it listens on one
// connection of db, held while the store has waiters (and 1s more). A
// connection of another driver is an error, logged by the store, which
// then works without notifications.
func DBListener(db *sql.DB) sqlstore.Listener { return dbListener{db} }

type dbListener struct{ db *sql.DB }

func (l dbListener) Listen(ctx context.Context, channel string, ready func(), notify func(string)) error {
	conn, err := l.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	var listenErr error
	err = conn.Raw(func(dc any) error {
		sc, ok := dc.(*stdlib.Conn)
		if !ok {
			listenErr = fmt.Errorf("pgxstore: DBListener needs pgx's stdlib driver, not %T", dc)
			return nil
		}
		listenErr = listen(ctx, sc.Conn(), channel, ready, notify)
		if sc.Conn().IsClosed() {
			return sqldriver.ErrBadConn // database/sql drops it
		}
		return nil
	})
	if listenErr != nil {
		return listenErr
	}
	return err
}

// listen runs LISTEN on conn and delivers its notifications until ctx
// ends or conn fails, then UNLISTENs (or closes conn, if that fails).
func listen(ctx context.Context, conn *pgx.Conn, channel string, ready func(), notify func(string)) error {
	// channel is the table's name and a suffix: a plain identifier.
	if _, err := conn.Exec(ctx, `LISTEN "`+channel+`"`); err != nil {
		return err
	}
	ready()
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			if ctx.Err() == nil {
				return err
			}
			uctx, cancel := context.WithTimeout(context.Background(), unlistenTimeout)
			defer cancel()
			if _, uerr := conn.Exec(uctx, `UNLISTEN *`); uerr != nil {
				_ = conn.Close(uctx)
			}
			return ctx.Err()
		}
		notify(n.Payload)
	}
}
