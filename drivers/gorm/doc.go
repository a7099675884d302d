// Package gormstore keeps leasehold's locks in a table of the database the
// application already reaches through GORM (gorm.io/gorm): PostgreSQL,
// MySQL 8 / MariaDB 10.6+ or SQLite 3.35+, with any of their GORM
// dialectors (gorm.io/driver/postgres, gorm.io/driver/mysql,
// gorm.io/driver/sqlite or the pure-Go github.com/glebarez/sqlite).
//
// Import it as
//
//	import gormstore "github.com/leasehold/leasehold/drivers/gorm"
//
// The package is named gormstore, not gorm, so that it never clashes with
// gorm.io/gorm, which the same file usually imports.
//
// [New] takes the application's *gorm.DB. The statements are those of the
// SQL engine (github.com/leasehold/leasehold/drivers/sql, package
// sqlstore), so the store behaves exactly as sqlstore does on the same
// database: one statement per operation on PostgreSQL and SQLite, a short
// transaction with deadlock retry for MySQL's acquire, keys compared byte
// for byte everywhere. Every statement runs through GORM (Exec, Raw(...).Rows
// and Transaction), so GORM's logger, its callbacks and plugins such as
// tracing or gorm.io/plugin/dbresolver see each one. The store marks its
// statements as writes for dbresolver, so none of them, not even List,
// is sent to a read replica.
//
// Create the schema with [Store.Migrate] at start-up, or run the statements
// of [Store.Schema] (sqlstore.SchemaSQL) in your own migrations. GORM's
// AutoMigrate cannot create it: see docs/gorm.md in the repository.
package gormstore
