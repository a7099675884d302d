// Package integration tests the ent driver (package entstore) against real
// servers: the conformance kit on PostgreSQL, MariaDB/MySQL and SQLite
// through ent's driver, leasehold's tables in ent's automatic and versioned
// migrations, the statements a dialect.Debug driver sees, and a benchmark
// of the store next to the same statements sent by hand.
package integration
