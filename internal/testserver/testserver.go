// Package testserver gives a test a real PostgreSQL, MySQL/MariaDB or Redis
// server, with a database (or key namespace) of its own:
//
//  1. from an environment variable: LEASEHOLD_TEST_POSTGRES (a postgres://
//     URL or key=value DSN), LEASEHOLD_TEST_MYSQL (a go-sql-driver DSN),
//     LEASEHOLD_TEST_REDIS (a redis:// URL);
//  2. else from a container started with testcontainers-go, if a Docker
//     engine looks reachable (DOCKER_HOST is set or /var/run/docker.sock
//     exists); one container per server kind per process;
//  3. else the test is skipped, with the reason; but with CI=true a missing
//     server fails the test instead.
//
// Each call creates a database lh_<random> (dropped when the test ends) or,
// for Redis, a random key prefix (whose keys are deleted when it ends), so
// tests and concurrent runs do not collide.
package testserver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"testing"
	"time"
)

// Environment variables that name a running server.
const (
	EnvPostgres = "LEASEHOLD_TEST_POSTGRES"
	EnvMySQL    = "LEASEHOLD_TEST_MYSQL"
	EnvRedis    = "LEASEHOLD_TEST_REDIS"
)

// setupTimeout bounds creating or dropping a test's database.
const setupTimeout = 30 * time.Second

// SkipPrefix starts the message of every test (or Ginkgo spec) skipped for
// want of a server, so that a summary of the run (internal/testall) can
// count those skips apart from the others.
const SkipPrefix = "testserver: "

// unavailable skips t, or fails it under CI=true, where a missing server
// must not turn the whole suite into skips.
func unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	reason := fmt.Sprintf(format, args...)
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s%s (CI=true: a missing server is a failure)", SkipPrefix, reason)
	}
	t.Skip(SkipPrefix + reason)
}

// randomName returns prefix followed by 12 random hex digits.
func randomName(prefix string) string {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	return prefix + hex.EncodeToString(b[:])
}

func setupContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), setupTimeout)
}
