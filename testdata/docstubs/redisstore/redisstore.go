// Package redisstore stands for the reader's own store in
// docs/conformance.md: the doc test builds the page's code against it.
package redisstore

import (
	"context"
	"time"
)

// Store is a store as a driver's author writes it.
type Store struct{}

// Option configures a Store.
type Option func(*Store)

// PoolSize sets the size of the store's connection pool.
func PoolSize(n int) Option { return func(*Store) {} }

// Open returns a store on the Redis server at addr.
func Open(addr string, opts ...Option) (*Store, error) { return &Store{}, nil }

// Close closes the store's client.
func (*Store) Close() error { return nil }

// Acquire takes key for owner.
func (*Store) Acquire(ctx context.Context, key, owner string, ttl time.Duration) (int64, bool, error) {
	return 0, false, nil
}

// Renew extends owner's hold of key.
func (*Store) Renew(ctx context.Context, key, owner string, ttl time.Duration) (bool, error) {
	return false, nil
}

// Release frees key if owner holds it.
func (*Store) Release(ctx context.Context, key, owner string) (bool, error) { return false, nil }
