package rueidisstore

import (
	"context"
	"crypto/sha1"
	"encoding/hex"

	"github.com/redis/rueidis"
)

// Each operation is one Lua script, which Redis runs atomically: the owner
// check and the write cannot be split by another client's command. KEYS[1]
// is the lock's hash (fields o: owner, t: token; expiring with the lock) and
// KEYS[2] its floor key (the key's last token, kept after the lock ends).
// Every call that can fail (a key of the wrong type) comes before the first
// write, because Redis does not roll a failed script back.
//
// Tokens are numbers of microseconds: the greater of the key's floor + 1
// and the server's clock (TIME, allowed before writes since Redis 7
// replicates a script's effects, not the script). Lua numbers are doubles,
// exact up to 2^53; the server's clock reaches that in the year 2255, and
// the script refuses a floor that leaves no room.
var (
	//
	// acquireScript answers a token when it took the key; when the key is
	// held, 0 minus the milliseconds the holder has left (at least 1), or 0
	// for a lock without expiry, which the store never writes.
	acquireScript = newScript(`
local left = redis.call('PTTL', KEYS[1])
if left >= 0 then return -math.max(left, 1) end
if left == -1 then return 0 end
local floor = redis.call('GET', KEYS[2])
if floor then
  floor = tonumber(floor)
  if not floor or floor < 0 or floor >= 9007199254740991 then
    return redis.error_reply('ERR leasehold: floor key ' .. KEYS[2] .. ' does not hold a token below 2^53')
  end
else
  floor = 0
end
local now = redis.call('TIME')
local token = string.format('%.0f', math.max(floor + 1, tonumber(now[1]) * 1000000 + tonumber(now[2])))
redis.call('HSET', KEYS[1], 'o', ARGV[1], 't', token)
redis.call('PEXPIRE', KEYS[1], ARGV[2])
if ARGV[3] == '0' then
  redis.call('SET', KEYS[2], token)
else
  redis.call('SET', KEYS[2], token, 'PX', ARGV[3])
end
return tonumber(token)`)

	// renewScript moves the lock's expiry, and the floor's with it, so the
	// floor always outlives the lock by the retention. Running it twice
	// for an owner does what running it once does (it never creates a
	// lock), so rueidis may send it again after a connection error.
	renewScript = retryable(newScript(`
if redis.call('HGET', KEYS[1], 'o') ~= ARGV[1] then return 0 end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
if ARGV[3] ~= '0' then redis.call('PEXPIRE', KEYS[2], ARGV[3]) end
return 1`))

	// releaseScript deletes the lock's hash (the floor key stays), and
	// publishes the release on KEYS[2], the lock's release channel, with
	// SPUBLISH: in a Cluster the message stays on the lock's node (the
	// channel shares the lock's hash slot), and a standalone server treats
	// it as PUBLISH. Waiters of other processes wake on it (see notify.go).
	releaseScript = newScript(`
if redis.call('HGET', KEYS[1], 'o') ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
redis.call('SPUBLISH', KEYS[2], '')
return 1`)

	// inspectScript reads one lock for List: owner, token and the
	// milliseconds it has left, or nil when it is gone. It writes nothing.
	inspectScript = retryable(newScript(`
local v = redis.call('HMGET', KEYS[1], 'o', 't')
if not v[1] then return false end
return {v[1], v[2], redis.call('PTTL', KEYS[1])}`))
)

// script is a Lua script sent as EVALSHA, and as EVAL when the server does
// not know it yet (NOSCRIPT: nothing ran). Unlike rueidis.Lua it takes its
// keys and arguments without building slices, to keep the hot path lean.
// Only scripts marked retryable may be sent again by rueidis after a
// connection error, when the first may have run: acquire (not re-entrant)
// and release (whose second run would answer false) are not.
type script struct {
	src, sha  string
	retryable bool
}

func retryable(sc script) script {
	sc.retryable = true
	return sc
}

func newScript(src string) script {
	sum := sha1.Sum([]byte(src))
	return script{src: src, sha: hex.EncodeToString(sum[:])}
}

// evalsha and eval build the script's two commands.
func (sc script) evalsha(c rueidis.CommandClient, keys []string, args ...string) rueidis.Completed {
	return sc.mark(c.B().Evalsha().Sha1(sc.sha).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build())
}

func (sc script) eval(c rueidis.CommandClient, keys []string, args ...string) rueidis.Completed {
	return sc.mark(c.B().Eval().Script(sc.src).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build())
}

func (sc script) mark(cmd rueidis.Completed) rueidis.Completed {
	if sc.retryable {
		return cmd.ToRetryable()
	}
	return cmd
}

// run runs the script on c. A script Redis refused without running it
// (TRYAGAIN, CLUSTERDOWN, LOADING: see [ErrNotRun]) is sent again until
// ctx ends; rueidis does so itself for retryable scripts only, since
// after a connection error a script may have run.
func (sc script) run(ctx context.Context, c rueidis.CommandClient, keys []string, args ...string) rueidis.RedisResult {
	for attempt := 0; ; attempt++ {
		res := c.Do(ctx, sc.evalsha(c, keys, args...))
		if noScript(res.Error()) {
			res = c.Do(ctx, sc.eval(c, keys, args...))
		}
		if !again(ctx, res, attempt) {
			return res
		}
	}
}

func noScript(err error) bool {
	rerr, ok := rueidis.IsRedisErr(err)
	return ok && rerr.IsNoScript()
}
