// Package integration holds the gocron adapter's tests against real stores
// (SQLite, PostgreSQL, Redis): several gocron schedulers, each on its own
// core.Locks, sharing one store, as instances of a service do. It is a
// module of its own, so that the adapter's go.mod needs no store driver.
package integration
