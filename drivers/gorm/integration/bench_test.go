package integration_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/leasehold/leasehold/internal/testserver"
)

// BenchmarkStore measures, per dialector, acquire+release and renew through
// the store ("store") next to the same statements run through the same
// *gorm.DB by hand ("raw"), as an application would write them:
// db.WithContext(ctx).Exec, Raw(...).Rows, and db.Transaction for MySQL's
// acquire; "paired" runs the two in turn in one loop and reports their
// ratio (testserver.Paired). stmts/op counts the statements GORM's
// callbacks ran (MySQL's acquire adds BEGIN and COMMIT). One goroutine, one
// key: the figures are round-trip latency, not throughput.
//
// Commits do not wait for the disk where a session can say so (PostgreSQL
// synchronous_commit=off, SQLite synchronous=OFF): an fsync costs
// milliseconds with a wide spread, and would drown the difference.
// MariaDB's flush is a server-wide setting, left alone.
func BenchmarkStore(b *testing.B) {
	for _, be := range backends {
		b.Run(be.name, func(b *testing.B) {
			db := openDSN(b, be, benchDSN(b, be), nil)
			stmts := new(atomic.Int64)
			count := func(*gorm.DB) { stmts.Add(1) }
			if err := errors.Join(
				db.Callback().Raw().After("gorm:raw").Register("bench:count", count),
				db.Callback().Row().After("gorm:row").Register("bench:count", count),
			); err != nil {
				b.Fatal(err)
			}
			s := migrated(b, db)
			ctx := context.Background()
			const ttl = time.Minute
			for _, k := range []string{"bench-renew", "bench-renew-by-hand"} {
				if _, ok, err := s.Acquire(ctx, k, "o", ttl); err != nil || !ok {
					b.Fatal(ok, err)
				}
			}
			// The engine's statements of each operation on the keys the
			// hand-written side uses, from the scripted executor.
			engine := &calls{}
			scripted, err := engineStore(be.dialect, engine)
			if err != nil {
				b.Fatal(err)
			}
			scripted.Acquire(ctx, "bench-ar-by-hand", "o", ttl)
			scripted.Release(ctx, "bench-ar-by-hand", "o")
			acquireRelease := engine.take()
			scripted.Renew(ctx, "bench-renew-by-hand", "o", ttl)
			renew := engine.take()

			for _, op := range []struct {
				name          string
				store, byHand func() error
			}{{
				"acquire-release",
				func() error {
					if _, ok, err := s.Acquire(ctx, "bench-ar", "o", ttl); err != nil || !ok {
						return errors.Join(err, errNotDone)
					}
					if ok, err := s.Release(ctx, "bench-ar", "o"); err != nil || !ok {
						return errors.Join(err, errNotDone)
					}
					return nil
				},
				func() error { return byHand(ctx, db, acquireRelease) },
			}, {
				"renew",
				func() error {
					if ok, err := s.Renew(ctx, "bench-renew", "o", ttl); err != nil || !ok {
						return errors.Join(err, errNotDone)
					}
					return nil
				},
				func() error { return byHand(ctx, db, renew) },
			}} {
				b.Run(op.name, func(b *testing.B) {
					testserver.Paired(b, op.store, op.byHand, stmts, "stmts/op")
				})
			}
		})
	}
}

var errNotDone = errors.New("not acquired, renewed or released")

// byHand runs the statements of cs through db as an application that wrote
// them would, inside db.Transaction where cs is a transaction.
func byHand(ctx context.Context, db *gorm.DB, cs []call) error {
	run := func(db *gorm.DB, cs []call) error {
		for _, c := range cs {
			if !c.query {
				if err := db.WithContext(ctx).Exec(c.sql, c.args...).Error; err != nil {
					return err
				}
				continue
			}
			rows, err := db.WithContext(ctx).Raw(c.sql, c.args...).Rows()
			if err != nil {
				return err
			}
			for rows.Next() {
			}
			if err := errors.Join(rows.Err(), rows.Close()); err != nil {
				return err
			}
		}
		return nil
	}
	for len(cs) > 0 {
		if cs[0].sql != begin {
			if err := run(db, cs[:1]); err != nil {
				return err
			}
			cs = cs[1:]
			continue
		}
		end := 1
		for cs[end].sql != commit {
			end++
		}
		body := cs[1:end]
		if err := db.WithContext(ctx).Transaction(func(tx *gorm.DB) error { return run(tx, body) }); err != nil {
			return err
		}
		cs = cs[end+1:]
	}
	return nil
}

// benchDSN is a new database of be whose commits do not wait for the disk.
func benchDSN(b *testing.B, be backend) string {
	dsn := be.dsn(b)
	switch be.name {
	case "postgres":
		return pgParam(dsn, "synchronous_commit", "off")
	case "sqlite-mattn":
		return dsn + "&_synchronous=OFF"
	case "sqlite-glebarez":
		return dsn + "&_pragma=synchronous(OFF)"
	}
	return dsn
}
