package testserver

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/testcontainers/testcontainers-go"
	tcmysql "github.com/testcontainers/testcontainers-go/modules/mysql"
	tcpostgres "github.com/testcontainers/testcontainers-go/modules/postgres"
	tcredis "github.com/testcontainers/testcontainers-go/modules/redis"
)

// Images started when no environment variable names a server. CI's version
// matrix picks others with LEASEHOLD_TEST_POSTGRES_IMAGE,
// LEASEHOLD_TEST_MYSQL_IMAGE and LEASEHOLD_TEST_REDIS_IMAGE.
const (
	PostgresImage = "postgres:16-alpine"
	MySQLImage    = "mysql:8.4"
	RedisImage    = "redis:7-alpine"
)

// image returns the image named by the variable env, else def.
func image(env, def string) string {
	if v := os.Getenv(env); v != "" {
		return v
	}
	return def
}

// container is one server container, started at most once per process.
type container struct {
	once sync.Once
	url  string
	err  error
}

var (
	pgContainer, mysqlContainer, redisContainer container

	startedMu sync.Mutex
	started   []testcontainers.Container
)

// dockerReachable checks cheaply whether a Docker engine may be there, so a
// machine without one skips at once instead of timing out.
func dockerReachable() bool {
	if os.Getenv("DOCKER_HOST") != "" {
		return true
	}
	_, err := os.Stat("/var/run/docker.sock")
	return err == nil
}

// fromContainer returns the URL of the server of kind c, starting its
// container on first use. env names the variable that would have spared it.
func fromContainer(t testing.TB, c *container, kind, env string, start func(context.Context) (testcontainers.Container, string, error)) string {
	t.Helper()
	if !dockerReachable() {
		unavailable(t, "no %s: set %s, or make a Docker engine reachable (DOCKER_HOST or /var/run/docker.sock)", kind, env)
	}
	c.once.Do(func() {
		// Mapped ports are published on the host: reach them on loopback,
		// never through a guessed gateway address.
		if os.Getenv("TESTCONTAINERS_HOST_OVERRIDE") == "" {
			os.Setenv("TESTCONTAINERS_HOST_OVERRIDE", "127.0.0.1")
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		ctr, url, err := start(ctx)
		if ctr != nil {
			startedMu.Lock()
			started = append(started, ctr)
			startedMu.Unlock()
		}
		c.url, c.err = url, err
	})
	if c.err != nil {
		unavailable(t, "no %s: %s is unset and its container did not start: %v", kind, env, c.err)
	}
	return c.url
}

func startPostgres(ctx context.Context) (testcontainers.Container, string, error) {
	ctr, err := tcpostgres.Run(ctx, image("LEASEHOLD_TEST_POSTGRES_IMAGE", PostgresImage),
		tcpostgres.WithDatabase("test"),
		tcpostgres.WithUsername("postgres"),
		tcpostgres.WithPassword("postgres"),
		tcpostgres.BasicWaitStrategies(),
	)
	if err != nil {
		return containerOrNil(ctr), "", err
	}
	url, err := ctr.ConnectionString(ctx, "sslmode=disable")
	return ctr, url, err
}

func startMySQL(ctx context.Context) (testcontainers.Container, string, error) {
	ctr, err := tcmysql.Run(ctx, image("LEASEHOLD_TEST_MYSQL_IMAGE", MySQLImage),
		tcmysql.WithDatabase("test"),
		tcmysql.WithUsername("root"),
		tcmysql.WithPassword("test"),
	)
	if err != nil {
		return containerOrNil(ctr), "", err
	}
	dsn, err := ctr.ConnectionString(ctx)
	return ctr, dsn, err
}

func startRedis(ctx context.Context) (testcontainers.Container, string, error) {
	ctr, err := tcredis.Run(ctx, image("LEASEHOLD_TEST_REDIS_IMAGE", RedisImage))
	if err != nil {
		return containerOrNil(ctr), "", err
	}
	url, err := ctr.ConnectionString(ctx)
	return ctr, url, err
}

// containerOrNil avoids a typed nil in the Container interface.
func containerOrNil[C testcontainers.Container](c C) testcontainers.Container {
	var zero C
	if any(c) == any(zero) {
		return nil
	}
	return c
}

// Terminate stops the containers this process started. Testcontainers' reaper
// (Ryuk) removes them when the process exits anyway; Terminate is for runs
// with the reaper disabled (TESTCONTAINERS_RYUK_DISABLED=true).
func Terminate() {
	startedMu.Lock()
	defer startedMu.Unlock()
	for _, c := range started {
		testcontainers.TerminateContainer(c) //nolint:errcheck // best effort at exit
	}
	started = nil
}

// Main runs the tests of m, then [Terminate]s the containers they started:
//
//	func TestMain(m *testing.M) { os.Exit(testserver.Main(m)) }
func Main(m *testing.M) int {
	code := m.Run()
	Terminate()
	return code
}
