package integration

import (
	"context"
	"os"
	"testing"

	"github.com/redis/rueidis"

	rueidisstore "github.com/leasehold/leasehold/drivers/rueidis"
	"github.com/leasehold/leasehold/internal/testserver"
)

func TestMain(m *testing.M) { os.Exit(testserver.Main(m)) }

// newClient opens a rueidis client on the server or cluster of redisURL
// (rueidis.ParseURL's form), closed when t ends.
func newClient(t testing.TB, redisURL string) rueidis.Client {
	t.Helper()
	opt, err := rueidis.ParseURL(redisURL)
	if err != nil {
		t.Fatalf("parse %s: %v", redisURL, err)
	}
	opt.DisableCache = true
	c, err := rueidis.NewClient(opt)
	if err != nil {
		t.Fatalf("connect to %s: %v", redisURL, err)
	}
	t.Cleanup(c.Close)
	return c
}

// redisDo runs one command on the server of redisURL, over a client of its
// own (one that a restart has not broken yet).
func redisDo(t testing.TB, redisURL string, args ...string) rueidis.RedisResult {
	t.Helper()
	c := newClient(t, redisURL)
	return c.Do(context.Background(), c.B().Arbitrary(args...).Build())
}

// newStore returns a store on a new client of redisURL, under prefix.
func newStore(t testing.TB, redisURL, prefix string, opts ...rueidisstore.Option) *rueidisstore.Store {
	t.Helper()
	s, err := rueidisstore.New(newClient(t, redisURL), append([]rueidisstore.Option{rueidisstore.WithPrefix(prefix)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
