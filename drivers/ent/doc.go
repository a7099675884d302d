// Package entstore keeps leasehold's locks in a table of the application's
// own database, through the driver of its ent client (entgo.io/ent):
// PostgreSQL, MySQL 8 / MariaDB 10.6+, or SQLite 3.35+.
//
// Import it as
//
//	import entstore "github.com/leasehold/leasehold/drivers/ent"
//
// The package is named entstore, not ent, so that it never clashes with the
// ent package the application generates, which the same file usually
// imports.
//
// [New] takes the [dialect.Driver] the application builds its client from,
// so every statement goes through it and through whatever wraps it
// ([dialect.Debug], tracing drivers). [NewFromClient] takes the generated
// client itself, for code that is handed the client and not the driver; the
// client needs ent's sql/execquery feature. The statements, and the reasons
// each operation is atomic, are the SQL engine's: see
// github.com/leasehold/leasehold/drivers/sql (package sqlstore).
//
// The locks table belongs in the application's ent migrations: [NewSchema]
// describes it in ent's terms ([Schema.Tables]), adds it to ent's automatic
// migration ([Schema.MigrateOption]) and to the files of a versioned
// migration, with the few statements ent cannot express (the token sequence
// on PostgreSQL, the counter row on MySQL, the triggers on SQLite). Or call
// [Store.Migrate] at start-up.
package entstore
