// Package integration holds the tests of the GORM driver
// (github.com/leasehold/leasehold/drivers/gorm) that need a real database
// server, a GORM dialector or plugin, or the conformance kit: the kit on
// PostgreSQL, MariaDB/MySQL and SQLite (through gorm.io/driver/sqlite,
// which needs cgo, and the pure-Go github.com/glebarez/sqlite), the
// statements as they reach the server and GORM's logger, routing under
// gorm.io/plugin/dbresolver, the refusal of transactions and unsupported
// dialectors, and the benchmark against GORM used by hand. It is a module
// of its own so that none of that weight reaches the go.mod of an
// application that imports the driver.
package integration
