package integration

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/leasehold/leasehold/core"
	"github.com/leasehold/leasehold/internal/testserver"
	"github.com/redis/rueidis"
)

// redisClient returns a client of the Redis server at redisURL, closed when
// t ends.
func redisClient(t testing.TB, redisURL string) rueidis.Client {
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

// redisBase is what the broken Redis stores share: a client, a key prefix,
// and the scripts that are right (each broken store gets one call wrong).
type redisBase struct {
	c      rueidis.Client
	prefix string
}

var (
	// takeScript is SET NX PX and the key's token drawn from one counter,
	// atomically.
	takeScript = rueidis.NewLuaScript(`if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return redis.call('INCR', KEYS[2]) end return 0`)
	// renewScript extends the lock if the owner holds it.
	renewScript = rueidis.NewLuaScript(`if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end return 0`)
	// releaseScript deletes the lock if the owner holds it.
	releaseScript = rueidis.NewLuaScript(`if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`)
)

func (b redisBase) key(k string) string { return b.prefix + "lock:" + k }
func (b redisBase) tokens() string      { return b.prefix + "tokens" }
func ms(d time.Duration) string         { return strconv.FormatInt(d.Milliseconds(), 10) }

func (b redisBase) atomicAcquire(ctx context.Context, key, owner string, ttl time.Duration) (int64, bool, error) {
	token, err := takeScript.Exec(ctx, b.c, []string{b.key(key), b.tokens()}, []string{owner, ms(ttl)}).AsInt64()
	return token, err == nil && token > 0, err
}

func (b redisBase) atomicRenew(ctx context.Context, key, owner string, ttl time.Duration) (bool, error) {
	n, err := renewScript.Exec(ctx, b.c, []string{b.key(key)}, []string{owner, ms(ttl)}).AsInt64()
	return n == 1, err
}

func (b redisBase) atomicRelease(ctx context.Context, key, owner string) (bool, error) {
	n, err := releaseScript.Exec(ctx, b.c, []string{b.key(key)}, []string{owner}).AsInt64()
	return n == 1, err
}

// getThen (textbook store 1) takes the lock atomically (SET NX PX) but
// renews with GET then PEXPIRE and releases with GET then DEL.
type getThen struct{ redisBase }

func (s getThen) Acquire(ctx context.Context, key, owner string, ttl time.Duration) (int64, bool, error) {
	return s.atomicAcquire(ctx, key, owner, ttl)
}

func (s getThen) holds(ctx context.Context, key, owner string) (bool, error) {
	v, err := s.c.Do(ctx, s.c.B().Get().Key(s.key(key)).Build()).ToString()
	if rueidis.IsRedisNil(err) {
		return false, nil
	}
	return v == owner, err
}

func (s getThen) Renew(ctx context.Context, key, owner string, ttl time.Duration) (bool, error) {
	if ok, err := s.holds(ctx, key, owner); !ok || err != nil {
		return false, err
	}
	n, err := s.c.Do(ctx, s.c.B().Pexpire().Key(s.key(key)).Milliseconds(ttl.Milliseconds()).Build()).AsInt64()
	return n == 1, err
}

func (s getThen) Release(ctx context.Context, key, owner string) (bool, error) {
	if ok, err := s.holds(ctx, key, owner); !ok || err != nil {
		return false, err
	}
	n, err := s.c.Do(ctx, s.c.B().Del().Key(s.key(key)).Build()).AsInt64()
	return n == 1, err
}

// setnxThenExpire (textbook store 2) takes the lock with SETNX (and its
// token, in the same script) and sets the expiry with a separate PEXPIRE.
type setnxThenExpire struct{ redisBase }

var setnxScript = rueidis.NewLuaScript(`if redis.call('SETNX', KEYS[1], ARGV[1]) == 1 then return redis.call('INCR', KEYS[2]) end return 0`)

func (s setnxThenExpire) Acquire(ctx context.Context, key, owner string, ttl time.Duration) (int64, bool, error) {
	token, err := setnxScript.Exec(ctx, s.c, []string{s.key(key), s.tokens()}, []string{owner}).AsInt64()
	if err != nil || token == 0 {
		return 0, false, err
	}
	if err := s.c.Do(ctx, s.c.B().Pexpire().Key(s.key(key)).Milliseconds(ttl.Milliseconds()).Build()).Error(); err != nil {
		return 0, false, err
	}
	return token, true, nil
}

func (s setnxThenExpire) Renew(ctx context.Context, key, owner string, ttl time.Duration) (bool, error) {
	return s.atomicRenew(ctx, key, owner, ttl)
}

func (s setnxThenExpire) Release(ctx context.Context, key, owner string) (bool, error) {
	return s.atomicRelease(ctx, key, owner)
}

// incrAfter (textbook store 3) takes the lock with SET NX PX and then
// draws its token with a separate INCR.
type incrAfter struct{ redisBase }

func (s incrAfter) Acquire(ctx context.Context, key, owner string, ttl time.Duration) (int64, bool, error) {
	err := s.c.Do(ctx, s.c.B().Set().Key(s.key(key)).Value(owner).Nx().Px(ttl).Build()).Error()
	if rueidis.IsRedisNil(err) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	token, err := s.c.Do(ctx, s.c.B().Incr().Key(s.tokens()).Build()).AsInt64()
	if err != nil {
		return 0, false, err
	}
	return token, true, nil
}

func (s incrAfter) Renew(ctx context.Context, key, owner string, ttl time.Duration) (bool, error) {
	return s.atomicRenew(ctx, key, owner, ttl)
}

func (s incrAfter) Release(ctx context.Context, key, owner string) (bool, error) {
	return s.atomicRelease(ctx, key, owner)
}

// ownerPrefix takes locks atomically, but its Renew and Release accept an
// owner that is a prefix of the holder's, as a lock library that matches
// tokens with a prefix comparison does.
type ownerPrefix struct{ redisBase }

var (
	prefixRenewScript   = rueidis.NewLuaScript(`local v = redis.call('GET', KEYS[1]) if v and string.sub(v, 1, #ARGV[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end return 0`)
	prefixReleaseScript = rueidis.NewLuaScript(`local v = redis.call('GET', KEYS[1]) if v and string.sub(v, 1, #ARGV[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`)
)

func (s ownerPrefix) Acquire(ctx context.Context, key, owner string, ttl time.Duration) (int64, bool, error) {
	return s.atomicAcquire(ctx, key, owner, ttl)
}

func (s ownerPrefix) Renew(ctx context.Context, key, owner string, ttl time.Duration) (bool, error) {
	n, err := prefixRenewScript.Exec(ctx, s.c, []string{s.key(key)}, []string{owner, ms(ttl)}).AsInt64()
	return n == 1, err
}

func (s ownerPrefix) Release(ctx context.Context, key, owner string) (bool, error) {
	n, err := prefixReleaseScript.Exec(ctx, s.c, []string{s.key(key)}, []string{owner}).AsInt64()
	return n == 1, err
}

// mgetThen renews a batch the textbook way: one MGET reads the owners,
// then the leases whose owner matched are extended by PEXPIREs in a second
// round trip (one pipeline). Its other calls are atomic.
type mgetThen struct{ atomicRedis }

func (s mgetThen) MaxBatch() int { return 100 }

func (s mgetThen) RenewBatch(ctx context.Context, leases []core.Lease) ([]bool, error) {
	keys := make([]string, len(leases))
	for i, l := range leases {
		keys[i] = s.key(l.Key)
	}
	owners, err := s.c.Do(ctx, s.c.B().Mget().Key(keys...).Build()).ToArray()
	if err != nil {
		return nil, err
	}
	renewed := make([]bool, len(leases))
	var extend rueidis.Commands
	var which []int
	for i, l := range leases {
		if v, err := owners[i].ToString(); err == nil && v == l.Owner {
			extend = append(extend, s.c.B().Pexpire().Key(keys[i]).Milliseconds(l.TTL.Milliseconds()).Build())
			which = append(which, i)
		}
	}
	if len(extend) == 0 {
		return renewed, nil
	}
	for j, r := range s.c.DoMulti(ctx, extend...) {
		n, err := r.AsInt64()
		if err != nil {
			return nil, err
		}
		renewed[which[j]] = n == 1
	}
	return renewed, nil
}

// atomicRedis is the control: every call one script.
type atomicRedis struct{ redisBase }

func (s atomicRedis) Acquire(ctx context.Context, key, owner string, ttl time.Duration) (int64, bool, error) {
	return s.atomicAcquire(ctx, key, owner, ttl)
}

func (s atomicRedis) Renew(ctx context.Context, key, owner string, ttl time.Duration) (bool, error) {
	return s.atomicRenew(ctx, key, owner, ttl)
}

func (s atomicRedis) Release(ctx context.Context, key, owner string) (bool, error) {
	return s.atomicRelease(ctx, key, owner)
}

// redisStores returns a newStore function for the kit: each call a new
// client over the test's prefix, made by wrap.
func redisStores(t testing.TB, wrap func(redisBase) core.LockStore) func(testing.TB) core.LockStore {
	url, prefix := testserver.Redis(t)
	return func(tb testing.TB) core.LockStore {
		return wrap(redisBase{c: redisClient(tb, url), prefix: prefix})
	}
}
