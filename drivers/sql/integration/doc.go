// Package integration holds the tests of the SQL engine
// (github.com/leasehold/leasehold/drivers/sql) that need a real database
// server, the conformance kit or a database/sql driver. It is a module of
// its own so that none of that weight reaches the go.mod of an application
// that imports the engine.
package integration
