package etcdstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/leasehold/leasehold/core"
)

// DefaultPrefix starts every key the store writes, unless [Options.Prefix]
// says otherwise.
const DefaultPrefix = "leasehold/"

// DefaultMinTTL is etcd's minimum lease ttl with its default timing
// (heartbeat 100ms, election timeout 1s): 1.5 election timeouts, rounded up
// to whole seconds.
const DefaultMinTTL = 2 * time.Second

// scanLateness is how late etcd's leader frees a lease after its ttl: the
// lessor looks for expired leases every 500ms and then revokes them
// through raft. The declaration keeps a wide margin, since it only ever
// makes the store look later.
const scanLateness = time.Second

// Options configures a [Store]. The zero value is valid.
type Options struct {
	// Prefix starts every key the store writes: a lock on key k is the
	// etcd key Prefix+k. Default [DefaultPrefix].
	Prefix string
	// MinTTL is the cluster's minimum lease ttl, which etcd gives to any
	// shorter lease: 1.5 × --election-timeout, rounded up to whole
	// seconds. It only feeds [Store.ExpiryPrecision]. Default
	// [DefaultMinTTL] (2s), right for the default election timeout.
	MinTTL time.Duration
}

// Store is a [core.LockStore] on etcd, through the application's
// *clientv3.Client. Each acquisition is an etcd lease of its own, to which
// the lock's key is attached: renewing the lock keeps the lease alive,
// releasing it revokes the lease, and etcd deletes the key when the lease
// expires. The lease id is owned by that one acquisition, so an operation
// on the lease cannot touch a later holder's lock. The fencing token is
// the key's create revision: etcd's store-wide revision, which grows with
// every write and never goes back, not even across leader changes.
//
// A Store remembers the leases of the locks it acquired, to renew and
// release them without a read; a Store that did not acquire a lock reads
// its key once to find its lease. It is safe for concurrent use. It does
// not close the client.
type Store struct {
	cli    *clientv3.Client
	kv     clientv3.KV
	leases pb.LeaseClient
	prefix string
	minTTL time.Duration

	mu   sync.Mutex
	held map[lockID]heldLease
}

// lockID identifies one acquisition: owner ids are random per acquisition.
type lockID struct{ key, owner string }

// heldLease is the lease of a lock this store acquired, and the ttl it was
// granted, in whole seconds.
type heldLease struct {
	id  clientv3.LeaseID
	ttl int64
}

// New returns a store on cli with the default options.
//
// A nil cli, or one clientv3.New did not make (a zero value), gives a
// store that cannot work: [core.New] refuses it (see [Store.Valid]), and
// its methods answer errors matching [core.ErrInvalidArgument].
func New(cli *clientv3.Client) *Store { return NewWithOptions(cli, Options{}) }

// NewWithOptions returns a store on cli. A nil or zero cli is answered as
// by [New].
func NewWithOptions(cli *clientv3.Client, opts Options) *Store {
	if opts.Prefix == "" {
		opts.Prefix = DefaultPrefix
	}
	if opts.MinTTL <= 0 {
		opts.MinTTL = DefaultMinTTL
	}
	if cli == nil || cli.ActiveConnection() == nil {
		return &Store{prefix: opts.Prefix, minTTL: opts.MinTTL}
	}
	return &Store{
		cli:    cli,
		kv:     clientv3.NewKV(cli),
		leases: pb.NewLeaseClient(cli.ActiveConnection()),
		prefix: opts.Prefix,
		minTTL: opts.MinTTL,
		held:   map[lockID]heldLease{},
	}
}

// Valid implements [core.Validator]: a store on a nil client, or on one
// clientv3.New did not make, or a zero Store, cannot work.
func (s *Store) Valid() error {
	if s == nil || s.cli == nil || s.leases == nil {
		return errors.New("etcdstore: no connected *clientv3.Client (pass the one clientv3.New returned to New)")
	}
	return nil
}

// usable refuses a call on a store that cannot work, or with a nil ctx,
// with an error matching [core.ErrInvalidArgument]. Otherwise it returns
// the context the call's requests run in: ctx, marked as requiring a
// leader. A member that has lost its leader (partitioned from the
// majority) then answers at once that it has none, and ends a keep-alive
// stream when it loses it, instead of holding the request until its own
// timeout (7s by default, longer than most ttls); the retry goes to
// another endpoint of the client, and a lock survives the loss of a
// member its client can do without (TestPartition).
func (s *Store) usable(ctx context.Context) (context.Context, error) {
	if err := s.Valid(); err != nil {
		return nil, fmt.Errorf("%w: %w", core.ErrInvalidArgument, err)
	}
	if err := core.ValidateContext(ctx); err != nil {
		return nil, fmt.Errorf("etcdstore: %w", err)
	}
	return clientv3.WithRequireLeader(ctx), nil
}

// String names the store and its endpoints.
func (s *Store) String() string {
	if s.Valid() != nil {
		return "etcd (no client)"
	}
	return fmt.Sprintf("etcd %s (prefix %q)", strings.Join(s.cli.Endpoints(), ","), s.prefix)
}

// leaseSeconds is the lease ttl for a lock ttl: ttl plus [grantSlack],
// rounded up to whole seconds, never down, so that the lease never ends
// before the ttl.
func leaseSeconds(ttl time.Duration) int64 {
	return int64((ttl + grantSlack + time.Second - 1) / time.Second)
}

// grantSlack: a lease's ttl runs from its grant, and the key is attached
// to it a round trip later. Leases are granted at least this much longer
// than the ttl, so that the lock still lasts ttl from the transaction that
// took it; an acquisition slower than its lease's slack keeps the lease
// alive once more before it answers.
const grantSlack = 100 * time.Millisecond

// ExpiryPrecision declares how late etcd may free a lock of ttl (see
// [core.ExpiryPrecisioner]): the rounding of the ttl (plus a slack of
// 100ms) up to whole seconds and to the cluster's minimum, plus the
// leader's expiry scan and the revocation through raft. Leader changes come on top: a new leader gives
// every lease its whole ttl again (see docs/etcd.md).
func (s *Store) ExpiryPrecision(ttl time.Duration) time.Duration {
	return time.Duration(s.grantedSeconds(ttl))*time.Second - ttl + scanLateness
}

// Acquire grants a lease of ttl (rounded up to whole seconds) and attaches
// key to it in one transaction, if the key does not exist. The token is
// the revision of that transaction, the key's create revision. When the
// key is taken, or the transaction's outcome is unknown, the lease is
// revoked: a key attached to it goes with it, so nothing stays locked by an
// acquisition that answered no or failed. A call held up for longer than
// its lease (a paused process, a stalled connection, a slow leader), whose
// lease expired before or after its transaction, took nothing that lasts:
// it tries again on a new lease.
func (s *Store) Acquire(ctx context.Context, key, owner string, ttl time.Duration) (int64, bool, error) {
	ctx, err := s.usable(ctx)
	if err != nil {
		return 0, false, err
	}
	for {
		sent := time.Now()
		grant, err := s.cli.Grant(ctx, leaseSeconds(ttl))
		if err != nil {
			return 0, false, fmt.Errorf("etcdstore: acquire %q: grant lease: %w", key, err)
		}
		lease := grant.ID
		resp, err := s.attach(ctx, key, owner, lease)
		// A lease that expired before the transaction ran (the call was
		// held up for longer than the lease) makes etcd refuse the whole
		// transaction: nothing was taken, so take it on a new lease.
		if errors.Is(err, rpctypes.ErrLeaseNotFound) && ctx.Err() == nil {
			continue
		}
		if err != nil {
			s.revoke(lease)
			return 0, false, fmt.Errorf("etcdstore: acquire %q: %w", key, err)
		}
		token := resp.Header.Revision
		if !resp.Succeeded {
			kvs := resp.Responses[0].GetResponseRange().Kvs
			if len(kvs) == 0 || clientv3.LeaseID(kvs[0].Lease) != lease {
				s.revoke(lease)
				return 0, false, nil
			}
			token = kvs[0].CreateRevision // an earlier try of this call took it
		}
		ok, err := s.stillLasts(ctx, lease, sent, grant.TTL, ttl)
		if err != nil {
			s.revoke(lease)
			return 0, false, fmt.Errorf("etcdstore: acquire %q: %w", key, err)
		}
		if !ok {
			// The lease expired after the transaction, the key with
			// it: the call took longer than the lease. Nothing is held,
			// and the key may be free: "not acquired" would say someone
			// else holds it, so take it again on a new lease.
			if ctx.Err() != nil {
				return 0, false, fmt.Errorf("etcdstore: acquire %q: its lease expired before it could answer: %w", key, context.Cause(ctx))
			}
			continue
		}
		s.mu.Lock()
		s.held[lockID{key, owner}] = heldLease{lease, grant.TTL}
		s.mu.Unlock()
		return token, true, nil
	}
}

// attach puts owner's key on lease if the key does not exist, in one
// transaction, retried while etcd is unavailable. If the key exists, its
// own record comes back: a retry after a lost reply then finds the key on
// this acquisition's lease.
func (s *Store) attach(ctx context.Context, key, owner string, lease clientv3.LeaseID) (*clientv3.TxnResponse, error) {
	k := s.prefix + key
	var resp *clientv3.TxnResponse
	err := retry(ctx, func() error {
		var err error
		resp, err = s.kv.Txn(ctx).
			If(clientv3.Compare(clientv3.CreateRevision(k), "=", 0)).
			Then(clientv3.OpPut(k, owner, clientv3.WithLease(lease))).
			Else(clientv3.OpGet(k)).
			Commit()
		return err
	})
	return resp, err
}

// stillLasts makes sure that a lease granted for secs seconds, whose grant
// was sent at sent, and to which a key was just attached, lasts ttl from
// now: when the grant and the transaction took longer than the lease's
// slack, it keeps the lease alive once more. ok is false if the lease is
// gone (and its key with it).
func (s *Store) stillLasts(ctx context.Context, lease clientv3.LeaseID, sent time.Time, secs int64, ttl time.Duration) (bool, error) {
	if time.Since(sent) <= time.Duration(secs)*time.Second-ttl {
		return true, nil
	}
	granted, err := s.keepAlive(ctx, []clientv3.LeaseID{lease})
	if err != nil {
		return false, err
	}
	return granted[0] > 0, nil
}

// revoke revokes a lease that must not outlive the call, within a few
// seconds of its own: the caller's context may be what failed. If even
// that fails, the lease expires by itself within its ttl.
func (s *Store) revoke(lease clientv3.LeaseID) {
	ctx, cancel := context.WithTimeout(clientv3.WithRequireLeader(context.Background()), 2*time.Second)
	defer cancel()
	_, _ = s.cli.Revoke(ctx, lease)
}

// leaseOf returns the lease of owner's lock on key: the one this store
// granted, or the one a read of the key finds when its value is owner.
// found is false when owner does not hold key.
func (s *Store) leaseOf(ctx context.Context, key, owner string) (heldLease, bool, error) {
	s.mu.Lock()
	h, ok := s.held[lockID{key, owner}]
	s.mu.Unlock()
	if ok {
		return h, true, nil
	}
	resp, err := s.kv.Get(ctx, s.prefix+key)
	if err != nil {
		return heldLease{}, false, err
	}
	if len(resp.Kvs) == 0 || string(resp.Kvs[0].Value) != owner || resp.Kvs[0].Lease == 0 {
		return heldLease{}, false, nil
	}
	return heldLease{id: clientv3.LeaseID(resp.Kvs[0].Lease)}, true, nil
}

// forget drops a lock this store no longer holds.
func (s *Store) forget(key, owner string) {
	s.mu.Lock()
	delete(s.held, lockID{key, owner})
	s.mu.Unlock()
}

// Renew keeps the lock's lease alive: etcd sets its expiry to its granted
// ttl from now, atomically, if the lease still exists. The lease belongs to
// this acquisition alone, so it exists exactly while the lock does. A ttl
// other than the lease's (a hand-back's short one, a longer one) moves the
// key to a new lease of that ttl, in a transaction that checks the key is
// still the owner's, on the old lease.
func (s *Store) Renew(ctx context.Context, key, owner string, ttl time.Duration) (bool, error) {
	ctx, err := s.usable(ctx)
	if err != nil {
		return false, err
	}
	h, ok, err := s.leaseOf(ctx, key, owner)
	if err != nil {
		return false, fmt.Errorf("etcdstore: renew %q: %w", key, err)
	}
	if !ok {
		return false, nil
	}
	want := s.grantedSeconds(ttl)
	if h.ttl == 0 || h.ttl == want {
		granted, err := s.keepAlive(ctx, []clientv3.LeaseID{h.id})
		if err != nil {
			return false, fmt.Errorf("etcdstore: renew %q: %w", key, err)
		}
		if granted[0] <= 0 {
			s.forget(key, owner)
			return false, nil
		}
		if granted[0] == want {
			return true, nil
		}
	}
	ok, err = s.moveLease(ctx, key, owner, h.id, ttl)
	if err != nil {
		return false, fmt.Errorf("etcdstore: renew %q with a new ttl: %w", key, err)
	}
	return ok, nil
}

// grantedSeconds is the ttl etcd grants a lease asked for ttl: rounded up
// to whole seconds, and at least the cluster's minimum.
func (s *Store) grantedSeconds(ttl time.Duration) int64 {
	return max(leaseSeconds(ttl), int64((s.minTTL+time.Second-1)/time.Second))
}

// moveLease attaches owner's key, on lease old, to a new lease of ttl.
func (s *Store) moveLease(ctx context.Context, key, owner string, old clientv3.LeaseID, ttl time.Duration) (bool, error) {
	sent := time.Now()
	grant, err := s.cli.Grant(ctx, leaseSeconds(ttl))
	if err != nil {
		return false, err
	}
	k := s.prefix + key
	resp, err := s.kv.Txn(ctx).
		If(clientv3.Compare(clientv3.Value(k), "=", owner), clientv3.Compare(clientv3.LeaseValue(k), "=", old)).
		Then(clientv3.OpPut(k, owner, clientv3.WithLease(grant.ID))).
		Commit()
	if err != nil {
		// Either lease may hold the key now: both expire by themselves.
		return false, err
	}
	if !resp.Succeeded {
		s.revoke(grant.ID)
		s.forget(key, owner)
		return false, nil
	}
	s.mu.Lock()
	s.held[lockID{key, owner}] = heldLease{grant.ID, grant.TTL}
	s.mu.Unlock()
	s.revoke(old) // no key is on it now
	ok, err := s.stillLasts(ctx, grant.ID, sent, grant.TTL, ttl)
	if !ok && err == nil {
		s.forget(key, owner)
	}
	return ok, err
}

// Release revokes the lock's lease, which deletes its key in the same raft
// entry. A lease that no longer exists (the lock expired or was released)
// answers false.
func (s *Store) Release(ctx context.Context, key, owner string) (bool, error) {
	ctx, err := s.usable(ctx)
	if err != nil {
		return false, err
	}
	h, ok, err := s.leaseOf(ctx, key, owner)
	if err != nil {
		return false, fmt.Errorf("etcdstore: release %q: %w", key, err)
	}
	if !ok {
		return false, nil
	}
	_, err = s.cli.Revoke(ctx, h.id)
	if errors.Is(err, rpctypes.ErrLeaseNotFound) {
		s.forget(key, owner)
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("etcdstore: release %q: %w", key, err)
	}
	s.forget(key, owner)
	return true, nil
}

// ResetTokens answers [core.ErrTokensNotResettable]: the token is etcd's
// store-wide revision, which goes back only when the whole keyspace is
// restored from a snapshot; docs/etcd.md says how to restore without taking
// the revision back.
func (s *Store) ResetTokens(context.Context) error { return core.ErrTokensNotResettable }

var (
	_ core.LockStore         = (*Store)(nil)
	_ core.BatchRenewer      = (*Store)(nil)
	_ core.Lister            = (*Store)(nil)
	_ core.ExpiryPrecisioner = (*Store)(nil)
)
