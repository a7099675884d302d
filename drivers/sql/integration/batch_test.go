package integration_test

import (
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/leasehold/leasehold/core"
	sqlstore "github.com/leasehold/leasehold/drivers/sql"
	"github.com/leasehold/leasehold/internal/testserver"
)

// batchKeys are held keys that a careless batch would confuse: Unicode of
// every width, case and trailing-space near misses, quotes and JSON's
// special characters, the longest key.
var batchKeys = []string{"held", "Held", "held ", "é", "e\u0301", "😀 emoji", `quote " \ backslash`, "tab\tnewline\n", "<>&", strings.Repeat("ü", 500)}

// TestRenewBatch: one batch of held, released, expired, foreign and
// unknown leases, with a key twice, answers each exactly and renews only
// the held ones, each by its own ttl; on every dialect, through
// database/sql and through an executor in the ? style.
func TestRenewBatch(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		db := b.open(t)
		for _, s := range []*sqlstore.Store{
			migrated(t, db, b.dialect),
			questionStore(t, db, b.dialect, sqlstore.WithTable("question_locks")),
		} {
			checkRenewBatch(t, s)
		}
	})
}

func checkRenewBatch(t *testing.T, s *sqlstore.Store) {
	var leases []core.Lease
	var want []bool
	for i, k := range batchKeys {
		mustAcquire(t, s, k, "me", minute)
		leases = append(leases, core.Lease{Key: k, Owner: "me", TTL: time.Duration(i+2) * time.Minute})
		want = append(want, true)
	}
	mustAcquire(t, s, "released", "me", minute)
	wantRelease(t, s, "released", "me", true)
	mustAcquire(t, s, "expired", "me", 100*time.Millisecond)
	mustAcquire(t, s, "foreign", "other", minute)
	time.Sleep(300 * time.Millisecond)
	leases = append(leases,
		core.Lease{Key: "released", Owner: "me", TTL: minute},
		core.Lease{Key: "expired", Owner: "me", TTL: minute},
		core.Lease{Key: "foreign", Owner: "me", TTL: minute},
		core.Lease{Key: "never", Owner: "me", TTL: minute},
		core.Lease{Key: "foreign", Owner: "other", TTL: 20 * time.Minute}, // the key again, by its holder
		core.Lease{Key: "HELD", Owner: "me", TTL: minute},
	)
	want = append(want, false, false, false, false, true, false)

	got, err := s.RenewBatch(ctxT(t), leases)
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("%s: RenewBatch = %v, %v; want %v", s, got, err, want)
	}
	live, err := s.List(ctxT(t), "")
	if err != nil {
		t.Fatal(err)
	}
	ttls := map[string]time.Duration{}
	for i, l := range leases {
		if want[i] {
			ttls[l.Key] = l.TTL
		}
	}
	for _, li := range live {
		ttl, renewed := ttls[li.Key]
		if !renewed {
			ttl = minute // untouched since its acquisition
		}
		if li.ExpiresIn > ttl || li.ExpiresIn < ttl-30*time.Second {
			t.Fatalf("%s: %q expires in %v; want about %v", s, li.Key, li.ExpiresIn, ttl)
		}
		delete(ttls, li.Key)
	}
	if len(live) != len(batchKeys)+1 || len(ttls) != 0 {
		t.Fatalf("%s: %d live locks, %v renewed but not live; want the %d held keys and the foreign one", s, len(live), ttls, len(batchKeys))
	}
	// What was not renewed stays as it was: free, or held by its holder.
	wantAcquire(t, s, "released", "next", minute, true)
	wantAcquire(t, s, "expired", "next", minute, true)
	wantAcquire(t, s, "never", "next", minute, true)
	wantAcquire(t, s, "foreign", "me", minute, false)
	wantRelease(t, s, "foreign", "other", true)
}

// TestRenewBatchFullChunk: a batch of MaxBatch leases is one statement on
// PostgreSQL and SQLite, and a locking read and one update on MySQL.
func TestRenewBatchFullChunk(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		db := b.open(t)
		rec := &recorder{}
		s, err := sqlstore.NewWithExecutor(dbExecutor{q: db, db: db, recorder: rec}, b.dialect)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Migrate(ctxT(t)); err != nil {
			t.Fatal(err)
		}
		leases := make([]core.Lease, s.MaxBatch())
		for i := range leases {
			key := fmt.Sprintf("chunk:%04d", i)
			owner := "me"
			if i%10 == 9 {
				owner = "other" // every tenth lease is someone else's
			}
			mustAcquire(t, s, key, owner, minute)
			leases[i] = core.Lease{Key: key, Owner: "me", TTL: minute}
		}
		before := len(rec.stmts)
		got, err := s.RenewBatch(ctxT(t), leases)
		if err != nil {
			t.Fatal(err)
		}
		for i, ok := range got {
			if ok != (i%10 != 9) {
				t.Fatalf("lease %d answered %v", i, ok)
			}
		}
		want := 1
		if b.dialect.String() == sqlstore.MySQL.String() {
			want = 2
		}
		if n := len(rec.stmts) - before; n != want {
			t.Fatalf("a batch of %d leases ran %d statements; want %d", len(leases), n, want)
		}
	})
}

// TestMySQLBatchOnUTF8MB3Connection: keys of 4-byte characters renew in a
// batch on a connection whose character set cannot hold them (charset=utf8
// is utf8mb3 on MariaDB and MySQL), which a JSON of strings would lose.
func TestMySQLBatchOnUTF8MB3Connection(t *testing.T) {
	cfg, err := mysql.ParseDSN(testserver.MySQL(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Params = map[string]string{"charset": "utf8"}
	db, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	s := migrated(t, db, sqlstore.MySQL)
	mustAcquire(t, s, "😀", "me", minute)
	mustAcquire(t, s, "é", "me", minute)
	got, err := s.RenewBatch(ctxT(t), []core.Lease{{Key: "😀", Owner: "me", TTL: minute}, {Key: "é", Owner: "me", TTL: minute}})
	if err != nil || !slices.Equal(got, []bool{true, true}) {
		t.Fatalf("RenewBatch on a utf8mb3 connection = %v, %v; want both renewed", got, err)
	}
}
