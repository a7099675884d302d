package faults_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib" // registers "pgx" with database/sql

	"github.com/leasehold/leasehold/core"
	sqlstore "github.com/leasehold/leasehold/drivers/sql"
	"github.com/leasehold/leasehold/internal/testserver"
)

func TestMain(m *testing.M) { os.Exit(testserver.Main(m)) }

// ttl is the ttl of the scenarios' locks: short, so a scenario runs in
// seconds, and long next to a loopback round trip.
const ttl = 2 * time.Second

// backend is a server kind the scenarios run on.
type backend struct {
	name    string
	start   func(testing.TB) *testserver.Server
	driver  string
	dialect sqlstore.Dialect
	// via returns dsn pointed at addr (a proxy) instead of the server.
	via func(dsn, addr string) string
	// expiry selects the expiry of the lock of an owner on a key, in
	// microseconds since the epoch: the server runs on this host, so its
	// clock is the test's.
	expiry string
	// row selects the owner of a key's row and whether its lock is live.
	row string
}

var backends = []backend{
	{"PostgreSQL", testserver.PrivatePostgres, "pgx", sqlstore.Postgres, func(dsn, addr string) string {
		u, _ := url.Parse(dsn)
		u.Host = addr
		return u.String()
	}, `SELECT (extract(epoch FROM expires_at) * 1000000)::bigint FROM leasehold_locks WHERE lock_key = $1 AND owner = $2`,
		`SELECT owner, owner IS NOT NULL AND expires_at > clock_timestamp() FROM leasehold_locks WHERE lock_key = $1`},
	{"MariaDB", testserver.PrivateMariaDB, "mysql", sqlstore.MySQL, func(dsn, addr string) string {
		cfg, _ := mysql.ParseDSN(dsn)
		cfg.Addr = addr
		return cfg.FormatDSN()
	}, "SELECT TIMESTAMPDIFF(MICROSECOND, '1970-01-01', expires_at) FROM leasehold_locks WHERE lock_key = ? AND owner = ?",
		"SELECT owner, owner IS NOT NULL AND expires_at > UTC_TIMESTAMP(6) FROM leasehold_locks WHERE lock_key = ?"},
}

// forEachBackend runs f as a parallel subtest per backend, on a private
// server of its own.
func forEachBackend(t *testing.T, f func(t *testing.T, b backend, srv *testserver.Server)) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			f(t, b, b.start(t))
		})
	}
}

// openStore opens a pool on dsn and a migrated store over it, closed when
// the test ends.
func openStore(t testing.TB, b backend, dsn string) (*sqlstore.Store, *sql.DB) {
	t.Helper()
	db, err := sql.Open(b.driver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(64)
	db.SetMaxIdleConns(64)
	t.Cleanup(func() { db.Close() })
	store, err := sqlstore.New(db, b.dialect)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := store.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	return store, db
}

// witness wraps the store a core.Locks uses and notes, per owner, when the
// last Acquire or Renew that the store confirmed was sent. A holder must
// give up no later than ttl after that.
type witness struct {
	core.LockStore

	mu        sync.Mutex
	confirmed map[string]time.Time
}

func newWitness(s core.LockStore) *witness {
	return &witness{LockStore: s, confirmed: map[string]time.Time{}}
}

func (w *witness) note(owner string, sent time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.confirmed[owner] = sent
}

func (w *witness) Acquire(ctx context.Context, key, owner string, ttl time.Duration) (int64, bool, error) {
	sent := time.Now()
	token, ok, err := w.LockStore.Acquire(ctx, key, owner, ttl)
	if ok && err == nil {
		w.note(owner, sent)
	}
	return token, ok, err
}

func (w *witness) Renew(ctx context.Context, key, owner string, ttl time.Duration) (bool, error) {
	sent := time.Now()
	ok, err := w.LockStore.Renew(ctx, key, owner, ttl)
	if ok && err == nil {
		w.note(owner, sent)
	}
	return ok, err
}

// confirmedAt returns when owner's last confirmed call was sent.
func (w *witness) confirmedAt(owner string) time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.confirmed[owner]
}

// loss is one lost lock, as the instance reported it.
type loss struct {
	key, owner string
	at         time.Time // when the instance cancelled the lock's context
	// confirmed is when the last Acquire or Renew the store confirmed
	// before the loss was sent. (A renewal stuck in a stalled network may
	// be confirmed after the loss; the holder no longer counts it.)
	confirmed time.Time
	reason    core.LossReason
	// left is how long the store still held the lock after the loss: its
	// expiry in the store, read right after the loss, less the time of the
	// loss. (Renewals stuck in a stalled network cannot move it before the
	// network resumes.) It must be positive. known is false when the store
	// could not be asked (the server was down).
	left  time.Duration
	known bool
}

// holders is a core.Locks instance on a witnessed store that records its
// losses and, at each one, asks a second, direct store how long the lock
// has left there.
type holders struct {
	t       testing.TB
	b       backend
	locks   *core.Locks
	witness *witness
	direct  *sql.DB

	mu     sync.Mutex
	owners map[string]string // key → owner of this instance's lock on it
	losses []loss
	checks []chan struct{} // one per loss, closed once its expiry was read
}

// newHolders starts an instance on store; direct reaches the same server
// without faults.
func newHolders(t testing.TB, b backend, store *sqlstore.Store, direct *sql.DB, name string) *holders {
	t.Helper()
	h := &holders{t: t, b: b, witness: newWitness(store), direct: direct, owners: map[string]string{}}
	l, err := core.New(h.witness, core.WithLogger(slog.New(slog.DiscardHandler)),
		core.WithEventHandler(h.event), core.WithInstanceName(name), core.WithDefaultTTL(ttl))
	if err != nil {
		t.Fatal(err)
	}
	h.locks = l
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = l.Close(ctx)
		h.lossesSoFar()
	})
	return h
}

// acquire takes key and remembers its owner.
func (h *holders) acquire(ctx context.Context, key string, opts ...core.AcquireOption) (*core.Lock, error) {
	lk, err := h.locks.Acquire(ctx, key, opts...)
	if err == nil {
		h.mu.Lock()
		h.owners[key] = lk.Owner()
		h.mu.Unlock()
	}
	return lk, err
}

func (h *holders) event(ev core.Event) {
	if ev.Type != core.EventLockLost {
		return
	}
	var lost *core.LockLostError
	if !errors.As(ev.Err, &lost) {
		return
	}
	h.mu.Lock()
	i, owner := len(h.losses), h.owners[ev.Key]
	h.losses = append(h.losses, loss{key: ev.Key, owner: owner, at: ev.Time, confirmed: h.witness.confirmedAt(owner), reason: lost.Reason, left: -1})
	done := make(chan struct{})
	h.checks = append(h.checks, done)
	h.mu.Unlock()
	// The handler must return quickly: ask the store from a goroutine.
	go func() {
		defer close(done)
		at, ok := h.storeExpiry(ev.Key, owner)
		h.mu.Lock()
		h.losses[i].left, h.losses[i].known = at.Sub(ev.Time), ok
		h.mu.Unlock()
	}()
}

// storeExpiry reads the expiry of owner's lock on key in the store.
func (h *holders) storeExpiry(key, owner string) (time.Time, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var micros int64
	if err := h.direct.QueryRowContext(ctx, h.b.expiry, key, owner).Scan(&micros); err != nil {
		return time.Time{}, false
	}
	return time.UnixMicro(micros), true
}

// lossesSoFar waits for the store checks in flight and returns the losses.
func (h *holders) lossesSoFar() []loss {
	h.mu.Lock()
	checks := slices.Clone(h.checks)
	h.mu.Unlock()
	for _, done := range checks {
		<-done
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.losses)
}

// checkLosses checks every loss: reported as LostDeadline, before the
// store's expiry where the store could be asked, and, if bySend, no later
// than ttl after the owner's last confirmed call was sent (a bound that a
// host loaded enough to delay the timers by more than the safety margin
// breaks, while the store, which counts from a later instant, still holds
// the lock). It returns how late each
// loss came after the holder's own deadline, and how long before the
// store's expiry it came (where known).
func (h *holders) checkLosses(t testing.TB, losses []loss, bySend bool) (late, left []time.Duration) {
	t.Helper()
	margin := core.SafetyMargin(ttl)
	for _, l := range losses {
		sent := l.confirmed
		if l.reason != core.LostDeadline {
			t.Errorf("lock %s lost: %v; want %v", l.key, l.reason, core.LostDeadline)
		}
		if bySend && l.at.After(sent.Add(ttl)) {
			t.Errorf("lock %s lost %v after its last confirmed renewal was sent, more than its ttl of %v", l.key, l.at.Sub(sent), ttl)
		}
		late = append(late, l.at.Sub(sent.Add(ttl-margin)))
		if !l.known {
			continue
		}
		if l.left <= 0 {
			t.Errorf("lock %s lost %v after the store's expiry: the holder outlived its lease", l.key, -l.left)
		}
		left = append(left, l.left)
	}
	return late, left
}

// spread returns the minimum and maximum of ds, rounded for the figures.
func spread(ds []time.Duration) (lo, hi time.Duration) {
	if len(ds) == 0 {
		return 0, 0
	}
	lo, hi = slices.Min(ds), slices.Max(ds)
	return lo.Round(100 * time.Microsecond), hi.Round(100 * time.Microsecond)
}

// burnCPU keeps every core busy until the test ends, as a loaded host does:
// timers fire late, goroutines wait to run.
func burnCPU(t testing.TB) {
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			x := 0
			for {
				select {
				case <-stop:
					return
				default:
				}
				for i := range 100000 {
					x += i
				}
			}
		})
	}
	t.Cleanup(func() { close(stop); wg.Wait() })
}

// figure logs one measured figure, for docs/production.md.
func figure(t testing.TB, format string, args ...any) {
	t.Helper()
	t.Logf("figure: %s", fmt.Sprintf(format, args...))
}
