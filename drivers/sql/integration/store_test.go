package integration_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	sqlstore "github.com/leasehold/leasehold/drivers/sql"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leasehold/leasehold/core"
)

func TestAcquireRenewRelease(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		s, _ := newStore(t, b)
		t1 := mustAcquire(t, s, "job", "a", minute)
		wantAcquire(t, s, "job", "b", minute, false)
		wantAcquire(t, s, "job", "a", minute, false) // not re-entrant
		wantRenew(t, s, "job", "a", minute, true)
		wantRenew(t, s, "job", "b", minute, false)
		wantRelease(t, s, "job", "b", false)
		wantRelease(t, s, "job", "a", true)
		wantRelease(t, s, "job", "a", false)
		wantRenew(t, s, "job", "a", minute, false)
		t2 := mustAcquire(t, s, "job", "b", minute)
		if t2 <= t1 {
			t.Fatalf("token after release %d, want > %d", t2, t1)
		}
		wantRenew(t, s, "other", "b", minute, false) // a key that never existed
		wantRelease(t, s, "other", "b", false)
	})
}

func TestExpiredMeansGone(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		s, _ := newStore(t, b)
		t1 := mustAcquire(t, s, "k", "a", 100*time.Millisecond)
		time.Sleep(300 * time.Millisecond)
		wantRenew(t, s, "k", "a", minute, false)
		wantRelease(t, s, "k", "a", false)
		if l, err := s.List(ctxT(t), ""); err != nil || len(l) != 0 {
			t.Fatalf("List = %v, %v; want no live locks", l, err)
		}
		t2 := mustAcquire(t, s, "k", "b", minute)
		if t2 <= t1 {
			t.Fatalf("token after expiry %d, want > %d", t2, t1)
		}
		// The expired holder cannot touch the new holder's lock.
		wantRelease(t, s, "k", "a", false)
		wantRenew(t, s, "k", "b", minute, true)
	})
}

func TestTokenFloorAfterReset(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		s, _ := newStore(t, b)
		var last int64
		for i := range 5 {
			tok := mustAcquire(t, s, "k", fmt.Sprint("o", i), minute)
			if tok <= last {
				t.Fatalf("token %d after %d", tok, last)
			}
			last = tok
			wantRelease(t, s, "k", fmt.Sprint("o", i), true)
		}
		mustAcquire(t, s, "other", "x", minute)
		if err := s.ResetTokens(ctxT(t)); err != nil {
			t.Fatal(err)
		}
		tok := mustAcquire(t, s, "k", "after-reset", minute)
		if tok <= last {
			t.Fatalf("token after reset %d, want > %d (the key's floor)", tok, last)
		}
		// After an expiry too.
		wantRelease(t, s, "k", "after-reset", true)
		if err := s.ResetTokens(ctxT(t)); err != nil {
			t.Fatal(err)
		}
		last = tok
		mustAcquire(t, s, "k", "short", 50*time.Millisecond)
		time.Sleep(150 * time.Millisecond)
		if err := s.ResetTokens(ctxT(t)); err != nil {
			t.Fatal(err)
		}
		if tok := mustAcquire(t, s, "k", "after-expiry", minute); tok <= last+1 {
			t.Fatalf("token after reset and expiry %d, want > %d", tok, last+1)
		}
	})
}

// Keys that a folding, padding or normalising comparison would merge.
var exactKeys = []string{
	"a", "A", "a ", "a  ", " a", "a\t", "a\u00a0",
	"ss", "ß", "SS", "é", "e\u0301", "É",
	"i", "I", "ı", "İ", "ﬁ", "fi",
	"😀", "😁", "ä", "a\u0308",
}

func TestExactKeys(t *testing.T) {
	long4 := strings.Repeat("😀", core.MaxKeyLength)          // 2000 bytes
	long4b := strings.Repeat("😀", core.MaxKeyLength-1) + "😁" // differs in the last byte
	forEachBackend(t, func(t *testing.T, b backend) {
		s, _ := newStore(t, b)
		keys := append(slices.Clone(exactKeys), long4, long4b)
		tokens := map[int64]bool{}
		for i, k := range keys {
			tok := mustAcquire(t, s, k, fmt.Sprint("owner", i), minute)
			if tokens[tok] {
				t.Fatalf("token %d handed out twice", tok)
			}
			tokens[tok] = true
		}
		for i, k := range keys {
			wantRenew(t, s, k, fmt.Sprint("owner", i), minute, true)
			wantRenew(t, s, k, fmt.Sprint("owner", (i+1)%len(keys)), minute, false)
		}
		l, err := s.List(ctxT(t), "")
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, li := range l {
			got = append(got, li.Key)
		}
		want := slices.Clone(keys)
		slices.Sort(want) // byte order
		if !slices.Equal(got, want) {
			t.Fatalf("List keys\n got %q\nwant %q", got, want)
		}
		for i, k := range keys {
			wantRelease(t, s, k, fmt.Sprint("owner", i), true)
		}
		// Owners compare exactly too.
		mustAcquire(t, s, "owned", "Owner", minute)
		wantRenew(t, s, "owned", "owner", minute, false)
		wantRenew(t, s, "owned", "Owner ", minute, false)
		wantRelease(t, s, "owned", "OWNER", false)
		wantRelease(t, s, "owned", "Owner", true)
	})
}

func TestFourWeekTTL(t *testing.T) {
	const weeks4 = 4 * 7 * 24 * time.Hour // 2,419,200,000 ms: over 2^31
	forEachBackend(t, func(t *testing.T, b backend) {
		s, _ := newStore(t, b)
		mustAcquire(t, s, "long", "a", weeks4)
		check := func() {
			t.Helper()
			l, err := s.List(ctxT(t), "long")
			if err != nil || len(l) != 1 {
				t.Fatalf("List = %v, %v", l, err)
			}
			if d := weeks4 - l[0].ExpiresIn; d < 0 || d > minute {
				t.Fatalf("ExpiresIn %v, want just under %v", l[0].ExpiresIn, weeks4)
			}
		}
		check()
		wantRenew(t, s, "long", "a", time.Millisecond, true)
		time.Sleep(20 * time.Millisecond)
		wantRenew(t, s, "long", "a", weeks4, false) // the 1ms renewal shortened it
		mustAcquire(t, s, "long", "b", weeks4)
		wantRenew(t, s, "long", "b", weeks4, true)
		check()
	})
}

func TestMillisecondPrecision(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		s, _ := newStore(t, b)
		mustAcquire(t, s, "p", "a", 1500*time.Millisecond)
		l, err := s.List(ctxT(t), "p")
		if err != nil || len(l) != 1 {
			t.Fatalf("List = %v, %v", l, err)
		}
		if e := l[0].ExpiresIn; e <= time.Second || e > 1500*time.Millisecond {
			t.Fatalf("ExpiresIn %v, want in (1s, 1.5s]", e)
		}
	})
}

// Renewals in quick succession may set the same expiry; each must still
// report success (MySQL reports an unchanged row as 0 rows affected).
func TestRenewSameExpiry(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		s, _ := newStore(t, b)
		mustAcquire(t, s, "r", "a", minute)
		var wg sync.WaitGroup
		var failed atomic.Int32
		for range 8 {
			wg.Go(func() {
				for range 50 {
					ok, err := s.Renew(context.Background(), "r", "a", minute)
					if err != nil || !ok {
						t.Errorf("Renew = %v, %v", ok, err)
						failed.Add(1)
						return
					}
				}
			})
		}
		wg.Wait()
	})
}

func TestCancelledContextIsAnError(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		s, _ := newStore(t, b)
		mustAcquire(t, s, "held", "a", minute)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, ok, err := s.Acquire(ctx, "free", "b", minute); err == nil || ok {
			t.Errorf("Acquire(cancelled) = %v, %v; want an error", ok, err)
		} else if !errors.Is(err, context.Canceled) {
			t.Errorf("Acquire(cancelled) error %v, want context.Canceled", err)
		}
		if ok, err := s.Renew(ctx, "held", "a", minute); err == nil || ok {
			t.Errorf("Renew(cancelled) = %v, %v; want an error", ok, err)
		}
		if ok, err := s.Release(ctx, "held", "a"); err == nil || ok {
			t.Errorf("Release(cancelled) = %v, %v; want an error", ok, err)
		}
		if _, err := s.List(ctx, ""); err == nil {
			t.Error("List(cancelled): no error")
		}
		// The failed calls changed nothing.
		wantAcquire(t, s, "free", "c", minute, true)
		wantRenew(t, s, "held", "a", minute, true)
	})
}

func TestList(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		s, _ := newStore(t, b)
		t1 := mustAcquire(t, s, "jobs/b", "o1", minute)
		t2 := mustAcquire(t, s, "jobs/a", "o2", 2*minute)
		mustAcquire(t, s, "jobs/c", "o3", minute)
		wantRelease(t, s, "jobs/c", "o3", true)
		mustAcquire(t, s, "jobs", "o4", minute)
		mustAcquire(t, s, "jobsx", "o5", minute)
		mustAcquire(t, s, "elect/x", "o6", minute)
		mustAcquire(t, s, "jobs/%", "o7", minute) // LIKE metacharacters are plain
		mustAcquire(t, s, "jobs_z", "o8", minute)
		l, err := s.List(ctxT(t), "jobs/")
		if err != nil {
			t.Fatal(err)
		}
		if len(l) != 3 || l[0].Key != "jobs/%" || l[1].Key != "jobs/a" || l[2].Key != "jobs/b" {
			t.Fatalf("List(jobs/) = %+v", l)
		}
		if l[1].Owner != "o2" || l[1].Token != t2 || l[2].Owner != "o1" || l[2].Token != t1 {
			t.Fatalf("List(jobs/) = %+v", l)
		}
		if e := l[1].ExpiresIn; e <= minute || e > 2*minute {
			t.Fatalf("ExpiresIn %v", e)
		}
		if l, err := s.List(ctxT(t), "jobs%"); err != nil || len(l) != 0 {
			t.Fatalf("List(jobs%%) = %v, %v; want none", l, err)
		}
		if l, err := s.List(ctxT(t), ""); err != nil || len(l) != 7 {
			t.Fatalf("List('') = %v, %v; want 7 locks", l, err)
		}
	})
}

// Concurrent migrations of a fresh table, from every instance at once, all
// succeed, through New and through NewFromQuerier on the same *sql.DB (a
// handle that can begin transactions is used as one, so PostgreSQL's
// migrations queue on the advisory lock instead of colliding on the
// catalog's unique indexes). On SQLite the first round also opens the new
// file's first connections together, each switching it to WAL mode (the
// DSN's pragma), which SQLite refuses at once to all but one: Migrate must
// try again (it failed 3 runs in 100 when its read was not retried).
func TestMigrateIdempotentAndConcurrent(t *testing.T) {
	constructors := map[string]func(*sql.DB, sqlstore.Dialect, ...sqlstore.Option) (*sqlstore.Store, error){
		"New": sqlstore.New,
		"NewFromQuerier": func(db *sql.DB, d sqlstore.Dialect, opts ...sqlstore.Option) (*sqlstore.Store, error) {
			return sqlstore.NewFromQuerier(db, d, opts...)
		},
	}
	forEachBackend(t, func(t *testing.T, b backend) {
		db := b.open(t)
		for name, newStore := range constructors {
			for round := range 3 {
				table := fmt.Sprintf("concurrent_%s_%d", name, round)
				var wg sync.WaitGroup
				for i := range 8 {
					wg.Go(func() {
						s, err := newStore(db, b.dialect, sqlstore.WithTable(table))
						if err != nil {
							t.Error(err)
							return
						}
						if err := s.Migrate(context.Background()); err != nil {
							t.Errorf("%s: Migrate %d of table %s: %v", name, i, table, err)
						}
					})
				}
				wg.Wait()
			}
		}
		s, err := sqlstore.New(db, b.dialect, sqlstore.WithTable("concurrent_New_0"))
		if err != nil {
			t.Fatal(err)
		}
		for range 2 {
			if err := s.Migrate(ctxT(t)); err != nil {
				t.Fatal(err)
			}
		}
		mustAcquire(t, s, "k", "o", minute)
		// Schema returns what Migrate runs.
		sch, err := sqlstore.SchemaSQL(b.dialect, "concurrent_New_0")
		if err != nil || !slices.Equal(sch, s.Schema()) {
			t.Fatalf("SchemaSQL = %v, %v", sch, err)
		}
		// A second table in the same database is independent.
		s2, _ := sqlstore.New(db, b.dialect, sqlstore.WithTable("Second_1"))
		if err := s2.Migrate(ctxT(t)); err != nil {
			t.Fatal(err)
		}
		mustAcquire(t, s2, "k", "other", minute)
		// DropSQL undoes the schema: the store then reports the table missing.
		drop, err := sqlstore.DropSQL(b.dialect, "Second_1")
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range drop {
			if _, err := db.ExecContext(ctxT(t), q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		if _, _, err := s2.Acquire(ctxT(t), "k", "o", minute); !errors.Is(err, sqlstore.ErrNotMigrated) {
			t.Fatalf("Acquire after DropSQL: %v; want ErrNotMigrated", err)
		}
	})
}

// An operation on a database without the table says how to fix it, once,
// through the store and through core.Locks.
func TestNotMigrated(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		s, err := sqlstore.New(b.open(t), b.dialect)
		if err != nil {
			t.Fatal(err)
		}
		_, _, err = s.Acquire(ctxT(t), "k", "o", minute)
		if !errors.Is(err, sqlstore.ErrNotMigrated) {
			t.Fatalf("Acquire on an empty database: %v; want ErrNotMigrated", err)
		}
		for _, want := range []string{"sqlstore: ", "Migrate", "SchemaSQL", sqlstore.DefaultTable} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not say %q", err, want)
			}
		}
		if strings.Count(err.Error(), "sqlstore:") != 1 {
			t.Errorf("error %q repeats its prefix", err)
		}
		if _, err := s.Renew(ctxT(t), "k", "o", minute); !errors.Is(err, sqlstore.ErrNotMigrated) {
			t.Errorf("Renew: %v", err)
		}
		if _, err := s.List(ctxT(t), ""); !errors.Is(err, sqlstore.ErrNotMigrated) {
			t.Errorf("List: %v", err)
		}
	})
}

// A transaction handle is refused: a lock inside an uncommitted
// transaction would exclude nobody.
func TestTransactionRefused(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		db := b.open(t)
		tx, err := db.BeginTx(ctxT(t), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		_, err = sqlstore.NewFromQuerier(tx, b.dialect)
		if !errors.Is(err, sqlstore.ErrTransaction) || !errors.Is(err, core.ErrInvalidArgument) {
			t.Fatalf("NewFromQuerier(*sql.Tx) = %v; want ErrTransaction", err)
		}
	})
}
