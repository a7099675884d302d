// Package integration runs the tests of the pgx driver
// (github.com/leasehold/leasehold/drivers/pgx) that need a PostgreSQL
// server and the conformance kit. It is a module of its own so that none of
// that weight reaches the go.mod of an application that imports the driver.
package integration
