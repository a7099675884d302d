// Package faults puts the SQL store (github.com/leasehold/leasehold/drivers/sql)
// through faults on private PostgreSQL and MariaDB servers: restarts and
// crashes of the server, a network that stalls, connections reset in the
// middle of MySQL's acquire transaction, and replies lost after the server
// said yes. Each scenario checks that nothing was granted twice, that every
// holder learnt of its loss before the store's expiry, and that nothing was
// left locked; the figures it logs are those of docs/production.md's
// reliability section. The restart, stall and reset scenarios are those of
// internal/testserver/faults, which the other server drivers run too.
//
// The servers are the test's own (internal/testserver's private servers,
// never the shared ones); without their binaries the tests skip, and fail
// under CI=true. It is a module of its own, so that its weight reaches no
// application.
package faults
