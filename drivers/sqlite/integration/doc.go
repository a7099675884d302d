// Package integration runs the conformance kit against the embedded SQLite
// store (github.com/leasehold/leasehold/drivers/sqlite). It is a module of
// its own so that the kit and Ginkgo stay out of the go.mod of an
// application that imports the store.
package integration
