package integration

// The distributed-locking tests that gocron's own locker modules run
// (gocron-redis-lock, gocron-gorm-lock), written again for this adapter
// and run on each store: instances started at different moments share a
// per-second job, and every second runs it once; a run longer than its
// lock's ttl keeps the lock, so no other instance runs the job alongside.

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-co-op/gocron/v2"
	"github.com/redis/rueidis"

	"github.com/leasehold/leasehold/adapters/gocronguard"
	"github.com/leasehold/leasehold/core"
	rueidisstore "github.com/leasehold/leasehold/drivers/rueidis"
	sqlstore "github.com/leasehold/leasehold/drivers/sql"
	sqlitestore "github.com/leasehold/leasehold/drivers/sqlite"
	"github.com/leasehold/leasehold/internal/testserver"
)

func TestMain(m *testing.M) { os.Exit(testserver.Main(m)) }

// stores returns, for each store, a function that opens a new client of
// one shared store: an instance's.
func stores(t *testing.T) map[string]func(t *testing.T) core.LockStore {
	return map[string]func(t *testing.T) core.LockStore{
		"sqlite": func() func(t *testing.T) core.LockStore {
			path := filepath.Join(t.TempDir(), "locks.db")
			return func(t *testing.T) core.LockStore {
				s, err := sqlitestore.Open(path)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { s.Close() })
				return s
			}
		}(),
		"postgres": func(t *testing.T) core.LockStore {
			dsn := postgresDSN(t)
			db, err := sql.Open("pgx", dsn)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			s, err := sqlstore.New(db, sqlstore.Postgres)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Migrate(context.Background()); err != nil {
				t.Fatal(err)
			}
			return s
		},
		"redis": func(t *testing.T) core.LockStore {
			url, prefix := redisServer(t)
			opt, err := rueidis.ParseURL(url)
			if err != nil {
				t.Fatal(err)
			}
			opt.DisableCache = true
			c, err := rueidis.NewClient(opt)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(c.Close)
			s, err := rueidisstore.New(c, rueidisstore.WithPrefix(prefix))
			if err != nil {
				t.Fatal(err)
			}
			return s
		},
	}
}

// postgresDSN and redisServer give every instance of one (sub)test the
// same database, or key prefix.
var (
	shared   sync.Mutex
	pgDSN    = map[*testing.T]string{}
	redisURL = map[*testing.T][2]string{}
)

func postgresDSN(t *testing.T) string {
	shared.Lock()
	defer shared.Unlock()
	if dsn, ok := pgDSN[t]; ok {
		return dsn
	}
	dsn := testserver.Postgres(t)
	pgDSN[t] = dsn
	t.Cleanup(func() { shared.Lock(); delete(pgDSN, t); shared.Unlock() })
	return dsn
}

func redisServer(t *testing.T) (string, string) {
	shared.Lock()
	defer shared.Unlock()
	if v, ok := redisURL[t]; ok {
		return v[0], v[1]
	}
	url, prefix := testserver.Redis(t)
	redisURL[t] = [2]string{url, prefix}
	t.Cleanup(func() { shared.Lock(); delete(redisURL, t); shared.Unlock() })
	return url, prefix
}

// instance is one service instance: its Locks, Locker and scheduler.
type instance struct {
	locker *gocronguard.Locker
	sched  gocron.Scheduler
}

func newInstance(t *testing.T, store core.LockStore, name string, ttl time.Duration) *instance {
	t.Helper()
	locks, err := core.New(store, core.WithInstanceName(name), core.WithDefaultTTL(ttl),
		core.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { locks.Close(context.Background()) })
	locker, err := gocronguard.NewLocker(locks, gocronguard.WithKeyPrefix("gocron:"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := gocron.NewScheduler(gocron.WithDistributedLocker(locker))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Shutdown() })
	locker.ReadSchedules(s)
	return &instance{locker: locker, sched: s}
}

// TestPerSecondJobOnTwoInstances: two instances started 300ms apart run a
// per-second job; in 4.5s from the first start the job runs 4 times in all,
// once a second, whichever instance runs it.
func TestPerSecondJobOnTwoInstances(t *testing.T) {
	for name, open := range stores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			first := open(t)
			var runs atomic.Int64
			var insts []*instance
			for i := range 2 {
				store := first
				if i > 0 {
					store = open(t) // a client of its own, on the same store
				}
				in := newInstance(t, store, fmt.Sprintf("node%d", i), 10*time.Second)
				if _, err := in.sched.NewJob(gocron.DurationJob(time.Second), gocron.NewTask(func() { runs.Add(1) }),
					gocron.WithName("report")); err != nil {
					t.Fatal(err)
				}
				insts = append(insts, in)
			}
			start := time.Now()
			insts[0].sched.Start()
			time.Sleep(300 * time.Millisecond)
			insts[1].sched.Start()
			time.Sleep(4500*time.Millisecond - time.Since(start))
			for _, in := range insts {
				if err := in.sched.Shutdown(); err != nil {
					t.Fatal(err)
				}
			}
			if n := runs.Load(); n != 4 {
				t.Errorf("%d runs in 4.5s on two instances, want 4", n)
			}
		})
	}
}

// TestLongRunKeepsItsLock: a run of 2.5s with a lock ttl of 1s on one
// instance; the other instance's ticks during the run are skipped (the
// lock is renewed), so the job never runs twice at once.
func TestLongRunKeepsItsLock(t *testing.T) {
	for name, open := range stores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			first := open(t)
			var running, maxRunning, runs atomic.Int64
			var over atomic.Bool // the 4s are over: runs that start now are not counted
			var insts []*instance
			for i := range 2 {
				store := first
				if i > 0 {
					store = open(t)
				}
				in := newInstance(t, store, fmt.Sprintf("node%d", i), time.Second)
				task := gocron.NewTask(func() {
					n := running.Add(1)
					defer running.Add(-1)
					for {
						m := maxRunning.Load()
						if n <= m || maxRunning.CompareAndSwap(m, n) {
							break
						}
					}
					if !over.Load() {
						runs.Add(1)
					}
					time.Sleep(2500 * time.Millisecond) // the work
				})
				if _, err := in.sched.NewJob(gocron.DurationJob(500*time.Millisecond), task, gocron.WithName("long"),
					gocron.WithSingletonMode(gocron.LimitModeReschedule)); err != nil {
					t.Fatal(err)
				}
				insts = append(insts, in)
			}
			for _, in := range insts {
				in.sched.Start()
			}
			time.Sleep(4 * time.Second)
			over.Store(true)
			for _, in := range insts {
				if err := in.sched.Shutdown(); err != nil {
					t.Fatal(err)
				}
			}
			if m := maxRunning.Load(); m != 1 {
				t.Errorf("%d runs at once, want 1", m)
			}
			if n := runs.Load(); n < 1 || n > 2 {
				t.Errorf("%d runs of 2.5s started in 4s, want 1 or 2", n)
			}
		})
	}
}
