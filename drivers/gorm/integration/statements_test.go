package integration_test

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/leasehold/leasehold/core"
)

// engineOps are the operations of a store of the SQL engine, whatever runs
// its statements.
type engineOps interface {
	core.LockStore
	core.Lister
	Migrate(ctx context.Context) error
	ResetTokens(ctx context.Context) error
}

// TestStatementsReachTheServerAsWritten runs each operation through GORM
// and, beside it, through the engine on a scripted executor, and requires
// that what GORM hands database/sql be the engine's statements exactly,
// with the same arguments and transaction boundaries: GORM's parsing of the
// text (named @arguments, slices after "(", ? in the text) changes nothing
// but the placeholders, which PostgreSQL's dialector numbers. GORM's logger
// is given every one of them, as its dialector explains it.
func TestStatementsReachTheServerAsWritten(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		server := &calls{}
		traces := &traceLogger{}
		db := openConn(t, b, record(openPool(t, b, b.dsn(t)), server), &gorm.Config{Logger: traces})
		store := newStore(t, db)
		engine := &calls{}
		scripted, err := engineStore(b.dialect, engine)
		if err != nil {
			t.Fatal(err)
		}
		server.take() // the dialector's own start-up queries
		traces.take()

		// A key and owner that GORM would parse if they were SQL text;
		// they must arrive as arguments, untouched.
		const key, owner = "@key (?, ?) ? 'x'", "@owner ?"
		ctx := ctxT(t)
		steps := []struct {
			name string
			run  func(s engineOps) (ok bool, err error)
		}{
			{"migrate", func(s engineOps) (bool, error) { return true, s.Migrate(ctx) }},
			{"acquire", func(s engineOps) (bool, error) {
				_, ok, err := s.Acquire(ctx, key, owner, time.Minute)
				return ok, err
			}},
			{"renew", func(s engineOps) (bool, error) { return s.Renew(ctx, key, owner, time.Minute) }},
			{"list", func(s engineOps) (bool, error) {
				l, err := s.List(ctx, "@key")
				return len(l) == 1 && l[0].Key == key && l[0].Owner == owner, err
			}},
			{"release", func(s engineOps) (bool, error) { return s.Release(ctx, key, owner) }},
			{"reset tokens", func(s engineOps) (bool, error) { return true, s.ResetTokens(ctx) }},
		}
		for _, st := range steps {
			if ok, err := st.run(store); err != nil || !ok {
				t.Fatalf("%s through GORM: %v, %v; want true, nil", st.name, ok, err)
			}
			if _, err := st.run(scripted); err != nil {
				t.Fatalf("%s on the scripted executor: %v", st.name, err)
			}
			got, want := server.take(), engine.take()
			if b.name == "postgres" {
				for i := range want {
					want[i].sql = dollars(want[i].sql)
				}
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%s: the server was sent\n%v\nwant the engine's statements\n%v", st.name, got, want)
			}
			checkTraces(t, st.name, db, got, traces.take())
		}
	})
}

// checkTraces requires that GORM's logger was given each statement of
// sent, in order, as GORM's dialector explains it, without an error.
func checkTraces(t *testing.T, step string, db *gorm.DB, sent []call, got []traced) {
	t.Helper()
	var want []string
	for _, c := range sent {
		if c.sql != begin && c.sql != commit && c.sql != rollback {
			want = append(want, db.Dialector.Explain(c.sql, c.args...))
		}
	}
	if len(got) != len(want) {
		t.Fatalf("%s: GORM's logger saw %d statements, the server %d:\n%v\nwant\n%q", step, len(got), len(want), got, want)
	}
	for i, tr := range got {
		if tr.sql != want[i] || tr.err != nil {
			t.Errorf("%s: GORM's logger saw %q (error %v), want %q", step, tr.sql, tr.err, want[i])
		}
	}
}

func (t traced) String() string { return fmt.Sprintf("%q rows=%d err=%v", t.sql, t.rows, t.err) }
