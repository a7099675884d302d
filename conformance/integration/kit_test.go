package integration

import (
	"context"
	"database/sql"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold/conformance"
	"github.com/leasehold/leasehold/core"
	rueidisstore "github.com/leasehold/leasehold/drivers/rueidis"
	sqlstore "github.com/leasehold/leasehold/drivers/sql"
	"github.com/leasehold/leasehold/internal/testserver"
)

func TestMain(m *testing.M) { os.Exit(testserver.Main(m)) }

// runCase runs the kit's case named name against newStore and returns its
// verdict.
func runCase(t *testing.T, name string, newStore func(testing.TB) core.LockStore, opts conformance.Options) conformance.Verdict {
	t.Helper()
	for _, c := range conformance.Cases() {
		if c.Name == name {
			return c.Judge(t, newStore, opts)
		}
	}
	t.Fatalf("the kit has no case %q", name)
	return conformance.Verdict{}
}

// A broken store and the kit's cases that must fail on it.
type broken struct {
	name  string
	open  func(t testing.TB) func(testing.TB) core.LockStore
	cases []string
}

func brokenStores() []broken {
	return []broken{
		{"redis GET then PEXPIRE, GET then DEL", func(t testing.TB) func(testing.TB) core.LockStore {
			return redisStores(t, func(b redisBase) core.LockStore { return getThen{b} })
		}, []string{"steer-renew-takeover", "steer-release-takeover"}},
		{"redis SETNX then PEXPIRE", func(t testing.TB) func(testing.TB) core.LockStore {
			return redisStores(t, func(b redisBase) core.LockStore { return setnxThenExpire{b} })
		}, []string{"acquire-cut-short"}},
		{"redis SET NX then INCR", func(t testing.TB) func(testing.TB) core.LockStore {
			return redisStores(t, func(b redisBase) core.LockStore { return incrAfter{b} })
		}, []string{"steer-acquire-takeover"}},
		{"postgres SELECT then UPDATE by key", func(t testing.TB) func(testing.TB) core.LockStore {
			return postgresSelectThenUpdate(t, 2*conformance.DefaultCallers)
		}, []string{"steer-renew-takeover", "steer-release-takeover"}},
		// Calls that serialise on one connection: the kit stops one call
		// at a time, and the window it must find is the one look where
		// the Renew or Release holds no connection.
		{"postgres SELECT then UPDATE by key, one connection", func(t testing.TB) func(testing.TB) core.LockStore {
			return postgresSelectThenUpdate(t, 1)
		}, []string{"steer-renew-takeover", "steer-release-takeover"}},
		{"mariadb SELECT then UPDATE by key", func(t testing.TB) func(testing.TB) core.LockStore {
			return mariadbSelectThenUpdate(t, conformance.DefaultCallers)
		}, []string{"steer-renew-takeover", "steer-release-takeover"}},
		{"redis batch MGET then PEXPIRE", func(t testing.TB) func(testing.TB) core.LockStore {
			return redisStores(t, func(b redisBase) core.LockStore { return mgetThen{atomicRedis{b}} })
		}, []string{"steer-batch-takeover"}},
		{"redis owner compared by prefix", func(t testing.TB) func(testing.TB) core.LockStore {
			return redisStores(t, func(b redisBase) core.LockStore { return ownerPrefix{b} })
		}, []string{"owner-exact"}},
	}
}

// TestKitFailsBrokenStores runs, against each textbook broken store on a
// real server, the cases written for its flaw, and requires each to fail
// with the case's own proof, not an inconclusive verdict. Run it with
// -count=20 to see the kit catch them in every run.
func TestKitFailsBrokenStores(t *testing.T) {
	for _, b := range brokenStores() {
		t.Run(b.name, func(t *testing.T) {
			newStore := b.open(t)
			for _, name := range b.cases {
				v := runCase(t, name, newStore, conformance.Options{})
				msg := strings.Join(v.Messages, "\n")
				switch {
				case !v.Failed:
					t.Errorf("the kit's case %s passed this broken store (skipped: %v %s)", name, v.Skipped, msg)
				case strings.Contains(msg, "inconclusive"):
					t.Errorf("the kit's case %s called this broken store inconclusive: %s", name, msg)
				default:
					t.Logf("%s failed it, as it must: %s", name, firstLine(msg))
				}
			}
		})
	}
}

// TestKitPassesAtomicStores runs the cases the broken stores fail against
// correct stores on the same servers: an atomic Redis store of this file and
// the project's drivers.
func TestKitPassesAtomicStores(t *testing.T) {
	cases := []string{"steer-renew-takeover", "steer-release-takeover", "steer-acquire-takeover", "acquire-cut-short", "owner-exact", "steer-batch-takeover"}
	stores := []struct {
		name string
		open func(t testing.TB) func(testing.TB) core.LockStore
	}{
		{"redis scripts", func(t testing.TB) func(testing.TB) core.LockStore {
			return redisStores(t, func(b redisBase) core.LockStore { return atomicRedis{b} })
		}},
		{"rueidisstore", func(t testing.TB) func(testing.TB) core.LockStore {
			url, prefix := testserver.Redis(t)
			return func(tb testing.TB) core.LockStore {
				s, err := rueidisstore.New(redisClient(tb, url), rueidisstore.WithPrefix(prefix))
				if err != nil {
					tb.Fatal(err)
				}
				return s
			}
		}},
		{"sqlstore postgres", func(t testing.TB) func(testing.TB) core.LockStore {
			return sqlStores(t, openPool(t, "pgx", testserver.Postgres(t), 2*conformance.DefaultCallers), sqlstore.Postgres)
		}},
		{"sqlstore postgres, one connection", func(t testing.TB) func(testing.TB) core.LockStore {
			return sqlStores(t, openPool(t, "pgx", testserver.Postgres(t), 1), sqlstore.Postgres)
		}},
		{"sqlstore mariadb", func(t testing.TB) func(testing.TB) core.LockStore {
			return sqlStores(t, openPool(t, "mysql", testserver.MySQL(t), 2*conformance.DefaultCallers), sqlstore.MySQL)
		}},
	}
	for _, s := range stores {
		t.Run(s.name, func(t *testing.T) {
			newStore := s.open(t)
			for _, name := range cases {
				if v := runCase(t, name, newStore, conformance.Options{}); v.Failed {
					t.Errorf("the kit's case %s failed a correct store: %s", name, strings.Join(v.Messages, "\n"))
				}
			}
		})
	}
}

// sqlStores returns the project's SQL store over db, migrated once.
func sqlStores(t testing.TB, db *sql.DB, d sqlstore.Dialect) func(testing.TB) core.LockStore {
	t.Helper()
	s, err := sqlstore.New(db, d)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	return func(testing.TB) core.LockStore { return s }
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
