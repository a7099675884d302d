// Package integration tests the OpenTelemetry adapter
// (github.com/leasehold/leasehold/adapters/otel) with the OpenTelemetry
// SDK: a manual metric reader and an in-memory span exporter read what
// instances on the memory store and manual clocks report, and the
// Prometheus exporter shows the metric names a scrape sees. It is a module
// of its own so that the SDK and the exporter stay out of the adapter's
// go.mod.
package integration
