package integration

import (
	"bufio"
	"context"
	"fmt"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"

	leaseholdotel "github.com/leasehold/leasehold/adapters/otel"
	"github.com/leasehold/leasehold/core"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/otlptranslator"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

// Prometheus scrapes leasehold's metrics from the service's /metrics.
func Example_prometheus() {
	ctx := context.Background()
	store := core.NewMemoryStore() // in a service: the shared store
	mux := http.NewServeMux()

	// The exporter is a reader of the MeterProvider, serving its registry.
	registry := prometheus.NewRegistry()
	exporter, err := otelprom.New(
		otelprom.WithRegisterer(registry),
		otelprom.WithTranslationStrategy(otlptranslator.UnderscoreEscapingWithSuffixes),
	)
	if err != nil {
		log.Fatal(err)
	}
	meters := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter))
	defer meters.Shutdown(ctx)
	mux.Handle("GET /metrics", promhttp.HandlerFor(registry, promhttp.HandlerOpts{}))

	locks, err := core.New(store,
		core.WithLogger(slog.New(slog.DiscardHandler)),
		leaseholdotel.Instrument(leaseholdotel.WithMeterProvider(meters)))
	if err != nil {
		log.Fatal(err)
	}
	defer locks.Close(ctx)

	if _, err := locks.Acquire(ctx, "billing:invoice-export"); err != nil {
		log.Fatal(err)
	}
	scrape(mux, "leasehold_lease_held", "leasehold_acquire_attempts_total", "leasehold_store_duration_seconds_count")
	// Output:
	// leasehold_acquire_attempts_total{leasehold_lock_kind="lock",leasehold_outcome="acquired",otel_scope_name="github.com/leasehold/leasehold/adapters/otel",otel_scope_schema_url="",otel_scope_version=""} 1
	// leasehold_lease_held{leasehold_lock_kind="lock",otel_scope_name="github.com/leasehold/leasehold/adapters/otel",otel_scope_schema_url="",otel_scope_version=""} 1
	// leasehold_store_duration_seconds_count{leasehold_outcome="acquired",leasehold_store_operation="acquire",otel_scope_name="github.com/leasehold/leasehold/adapters/otel",otel_scope_schema_url="",otel_scope_version=""} 1
}

// scrape prints the lines of a GET /metrics on h that start with one of names.
func scrape(h http.Handler, names ...string) {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	sc := bufio.NewScanner(rec.Body)
	for sc.Scan() {
		for _, name := range names {
			if strings.HasPrefix(sc.Text(), name+"{") {
				fmt.Println(sc.Text())
			}
		}
	}
}
