// Command shopd runs the shop of leasehold's tutorial (docs/tutorial.md):
// the nightly invoice export and the stock reconciliation on a schedule,
// the admin endpoint that runs the export by hand, and the warehouse feed.
//
// It keeps the shop's tables and its locks in PostgreSQL when DATABASE_URL
// is a postgres:// URL, and otherwise in the SQLite file shop.db (or the
// file a sqlite:// DATABASE_URL names). Start three on one database to watch the jobs
// settle on one instance:
//
//	ADMIN_TOKEN=s3cret go run ./examples/shop/cmd/shopd -addr :8081 -reconcile-every 10s
//
// The accounting system and the warehouse are stand-ins that log what they
// are asked.
package main

import (
	"context"
	"crypto/subtle"
	"database/sql"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	leaseholdotel "github.com/leasehold/leasehold/adapters/otel"
	"github.com/leasehold/leasehold/core"
	"github.com/leasehold/leasehold/examples/shop"
)

func main() {
	addr := flag.String("addr", ":8080", "address of the admin endpoint")
	reconcileEvery := flag.Duration("reconcile-every", 5*time.Minute, "period of the stock reconciliation")
	flag.Parse()

	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	if err := run(log, *addr, *reconcileEvery); err != nil {
		log.Error("shopd failed", "err", err)
		os.Exit(1)
	}
}

func run(log *slog.Logger, addr string, reconcileEvery time.Duration) error {
	// SIGTERM (a deploy, a scale-down) or Ctrl+C starts the shutdown.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()

	db, store, err := openDatabase(ctx, os.Getenv("DATABASE_URL"))
	if err != nil {
		return err
	}
	defer db.Close() // last of all: the locks are handed back first

	// Metrics and traces go to the global OpenTelemetry providers; install
	// their SDK and exporters here (docs/observability.md).
	locks, err := core.New(store, core.WithLogger(log), leaseholdotel.Instrument())
	if err != nil {
		return err
	}
	// Three instances started at once would create the tables at once.
	if err := shop.MigrateOneAtATime(ctx, db, locks); err != nil {
		return err
	}
	if err := seed(ctx, db); err != nil {
		return err
	}
	s := &shop.Shop{DB: db, Accounting: accounting{log}, Warehouse: warehouse{log}, Log: log}
	jobs, err := s.NewJobs(locks)
	if err != nil {
		return err
	}
	if _, err := s.StartFeed(locks); err != nil {
		return err
	}

	// Every instance schedules both jobs; each tick runs on one instance.
	clock := core.SystemClock()
	shop.Every(ctx, clock, 24*time.Hour, 2*time.Hour, jobs.Export.Func()) // 02:00 UTC
	shop.Every(ctx, clock, reconcileEvery, 0, jobs.Reconcile.Func())

	mux := http.NewServeMux()
	mux.Handle("POST /admin/invoice-exports",
		requireToken(os.Getenv("ADMIN_TOKEN"), shop.ExportHandler(jobs.Export, log)))
	srv := &http.Server{Addr: addr, Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.ListenAndServe() }()
	log.Info("shop started", "addr", addr)

	select {
	case <-ctx.Done():
	case err := <-serveErr:
		log.Error("admin endpoint stopped", "err", err)
	}
	stop() // a second Ctrl+C kills at once
	return shutdown(log, srv, locks)
}

// shutdown stops the instance in order, within a deadline shorter than the
// time the platform gives between SIGTERM and SIGKILL (30 seconds on
// Kubernetes by default).
func shutdown(log *slog.Logger, srv *http.Server, locks *core.Locks) error {
	log.Info("shutting down")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// No new admin requests; wait for those in flight.
	if err := srv.Shutdown(ctx); err != nil {
		log.Warn("admin endpoint did not stop cleanly", "err", err)
	}
	// No new ticks; wait for the runs in progress (cancelled when ctx ends),
	// hand the job leases back, step down from the feed, release the rest.
	// The database pool is still open: the releases need it.
	if err := locks.Close(ctx); err != nil {
		return fmt.Errorf("release locks (they expire after their ttl): %w", err)
	}
	return nil
}

// requireToken lets through the requests that carry "Authorization: Bearer
// <token>". With no token configured, it refuses every request.
func requireToken(token string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if token == "" || !ok || subtle.ConstantTimeCompare([]byte(got), []byte(token)) != 1 {
			http.Error(w, "forbidden", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// seed gives the demo a catalog of one product and one order to invoice.
func seed(ctx context.Context, db *sql.DB) error {
	for _, q := range []string{
		`INSERT INTO stock (product_id, in_stock) VALUES ('salmon-kibble', 0) ON CONFLICT (product_id) DO NOTHING`,
		`INSERT INTO orders (id, total_cents) VALUES ('ord-1001', 2599) ON CONFLICT (id) DO NOTHING`,
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("seed the demo's data: %w", err)
		}
	}
	return nil
}

// accounting stands in for the accounting system.
type accounting struct{ log *slog.Logger }

func (a accounting) UploadInvoices(ctx context.Context, orders []shop.Order) (string, error) {
	batch := fmt.Sprintf("batch-%d", time.Now().UnixMilli())
	a.log.Info("accounting: batch booked", "batch", batch, "orders", len(orders))
	return batch, nil
}

// warehouse stands in for the warehouse: a fixed count, and a feed that
// sends nothing.
type warehouse struct{ log *slog.Logger }

func (w warehouse) StockCounts(ctx context.Context) ([]shop.StockCount, error) {
	return []shop.StockCount{{ProductID: "salmon-kibble", InStock: 12}}, nil
}

func (w warehouse) Alerts(ctx context.Context, fn func(shop.Alert)) error {
	w.log.Info("warehouse: feed connected")
	<-ctx.Done()
	w.log.Info("warehouse: feed disconnected")
	return ctx.Err()
}
