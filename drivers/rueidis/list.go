package rueidisstore

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/leasehold/leasehold/core"
)

// scanCount is the COUNT hint of each SCAN call.
const scanCount = 1000

// scan calls fn with the names SCAN finds for pattern on every node the
// client knows (every master of a Cluster, and replicas the client reads
// from, whose answers may repeat a master's). It never uses KEYS, which
// blocks the server for as long as it runs.
func (s *Store) scan(ctx context.Context, pattern string, fn func(name string)) error {
	for addr, node := range s.client.Nodes() {
		var cursor uint64
		for {
			e, err := node.Do(ctx, node.B().Scan().Cursor(cursor).Match(pattern).Count(scanCount).Build()).AsScanEntry()
			if err != nil {
				return fmt.Errorf("SCAN on %s: %w", addr, err)
			}
			for _, name := range e.Elements {
				fn(name)
			}
			if cursor = e.Cursor; cursor == 0 {
				break
			}
		}
	}
	return nil
}

// List implements [core.Lister]: the live locks whose key starts with
// prefix, ordered by key (byte order). It scans every node with SCAN MATCH
// on the escaped prefix, then reads each lock with one read-only script
// (all of them in one pipeline), skipping those that ended meanwhile.
func (s *Store) List(ctx context.Context, prefix string) ([]core.LockInfo, error) {
	if err := checkCtx(ctx); err != nil {
		return nil, err
	}
	fail := func(err error) ([]core.LockInfo, error) {
		return nil, fmt.Errorf("rueidisstore: list %q: %w", prefix, err)
	}
	seen := map[string]string{} // Redis name -> lock key
	err := s.scan(ctx, s.lockPattern(prefix), func(name string) {
		if key, ok := s.lockKey(name); ok && strings.HasPrefix(key, prefix) {
			seen[name] = key
		}
	})
	if err != nil {
		return fail(err)
	}
	names := make([]string, 0, len(seen))
	for name := range seen {
		names = append(names, name)
	}
	slices.SortFunc(names, func(a, b string) int { return strings.Compare(seen[a], seen[b]) })
	cmds := make([]rueidis.Completed, len(names))
	for i, name := range names {
		cmds[i] = inspectScript.evalsha(s.client, []string{name})
	}
	var out []core.LockInfo
	for i, res := range s.client.DoMulti(ctx, cmds...) {
		if noScript(res.Error()) {
			res = inspectScript.run(ctx, s.client, []string{names[i]})
		}
		info, live, err := lockInfo(seen[names[i]], res)
		if err != nil {
			return fail(fmt.Errorf("%s: %w", names[i], err))
		}
		if live {
			out = append(out, info)
		}
	}
	return out, nil
}

// lockInfo decodes the reply of inspectScript.
func lockInfo(key string, res rueidis.RedisResult) (core.LockInfo, bool, error) {
	v, err := res.ToArray()
	if rueidis.IsRedisNil(err) {
		return core.LockInfo{}, false, nil
	}
	if err != nil {
		return core.LockInfo{}, false, err
	}
	if len(v) != 3 {
		return core.LockInfo{}, false, fmt.Errorf("want owner, token and pttl, got %d values", len(v))
	}
	owner, err := v[0].ToString()
	if err != nil {
		return core.LockInfo{}, false, err
	}
	tokenStr, err := v[1].ToString()
	if err != nil {
		return core.LockInfo{}, false, err
	}
	token, err := strconv.ParseInt(tokenStr, 10, 64)
	if err != nil {
		return core.LockInfo{}, false, fmt.Errorf("token: %w", err)
	}
	pttl, err := v[2].AsInt64()
	if err != nil {
		return core.LockInfo{}, false, err
	}
	if pttl < 0 { // the script read the hash, so -1: no expiry
		return core.LockInfo{}, false, fmt.Errorf("lock %q has no expiry (PTTL %d): this store never writes such a lock", key, pttl)
	}
	return core.LockInfo{Key: key, Owner: owner, Token: token, ExpiresIn: time.Duration(pttl) * time.Millisecond}, true, nil
}

// ResetTokens deletes the floor key of every key under the store's prefix,
// on every node, as a FLUSHALL, a restart without persistence or a failover
// to a replica that missed the last writes would lose them; held locks stay
// held. Each key's next token then comes from the server's clock alone, and
// is still greater than every token the key had before, unless the clock
// went back. It is for tests (the conformance kit proves the tokens keep
// growing with it); never call it on a live system.
func (s *Store) ResetTokens(ctx context.Context) error {
	if err := checkCtx(ctx); err != nil {
		return err
	}
	var floors []string
	err := s.scan(ctx, s.floorPattern(), func(name string) {
		if _, ok := s.lockKey(strings.TrimSuffix(name, floorSuffix)); ok {
			floors = append(floors, name)
		}
	})
	if err != nil {
		return fmt.Errorf("rueidisstore: reset tokens: %w", err)
	}
	cmds := make([]rueidis.Completed, len(floors))
	for i, name := range floors {
		cmds[i] = s.client.B().Del().Key(name).Build()
	}
	for i, res := range s.client.DoMulti(ctx, cmds...) {
		if err := res.Error(); err != nil {
			return fmt.Errorf("rueidisstore: reset tokens: DEL %s: %w", floors[i], err)
		}
	}
	return nil
}
