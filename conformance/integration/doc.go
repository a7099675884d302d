// Package integration holds the conformance kit's own tests against real
// servers: textbook broken stores on Redis, PostgreSQL and MariaDB, each of
// which the kit must fail in every run, and correct stores, which it must
// pass. It is a module of its own so that none of its dependencies reach the
// kit's users.
package integration
