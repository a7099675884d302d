// Package integration tests the tutorial's example service,
// examples/shop, against real servers: three shopd processes started at
// once on a fresh PostgreSQL database, as the tutorial's "Try it" section
// does. It is a module of its own so that the example's module never
// requires the test servers' dependencies.
package integration
