// Package integration tests the bun driver (package bunstore) against real
// databases through bun's own dialects and drivers: PostgreSQL through bun's
// pgdriver and through pgx's database/sql adapter, MySQL/MariaDB through
// go-sql-driver/mysql, and SQLite through modernc.org/sqlite. It runs the
// conformance kit on each, and checks what the kit cannot see: that bun's
// query hooks see every statement, that keys survive bun's client-side
// formatting byte for byte, that transactions are refused, and that the
// migration registered with bun's migrate package runs up and down. It is a
// module of its own so that these drivers stay out of the driver's go.mod.
package integration
