package leaseholdotel_test

import (
	"context"
	"log"

	leaseholdotel "github.com/leasehold/leasehold/adapters/otel"
	"github.com/leasehold/leasehold/core"
)

// One option at start-up instruments the instance and every call it makes
// to its store. Metrics and spans go to the global providers, which the
// service sets up with its exporters (see docs/observability.md).
func ExampleInstrument() {
	store := core.NewMemoryStore() // in a service: the shared store
	locks, err := core.New(store, leaseholdotel.Instrument())
	if err != nil {
		log.Fatal(err)
	}
	defer locks.Close(context.Background())
}

// Keys go on spans, and on the metrics of jobs and elections, only when
// asked for.
func ExampleWithKeyAttribute() {
	locks, err := core.New(core.NewMemoryStore(), leaseholdotel.Instrument(leaseholdotel.WithKeyAttribute()))
	if err != nil {
		log.Fatal(err)
	}
	defer locks.Close(context.Background())
}
