// Statements in a function, with a store, a logger and an HTTP mux in scope.
package p

import (
	"context"
	"log"
	"log/slog"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/otlptranslator"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	leaseholdotel "github.com/leasehold/leasehold/adapters/otel"
	"github.com/leasehold/leasehold/core"
)

var (
	ctx    = context.Background()
	store  core.LockStore
	logger *slog.Logger
	mux    *http.ServeMux
)

func _() error {
	// BLOCK
	return nil
}
