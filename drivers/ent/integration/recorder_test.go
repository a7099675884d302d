package integration

import (
	"context"
	"sync"
	"sync/atomic"

	"entgo.io/ent/dialect"
)

// recorder is a dialect.Driver that counts what it passes on to the driver
// it wraps: each Exec and Query, on the driver or in a transaction, and
// each begin, commit and rollback, one round trip each. If keep is set it
// also keeps them, as "exec <query>", "query <query>", "begin", "commit"
// and "rollback".
type recorder struct {
	dialect.Driver
	n    atomic.Int64
	keep bool
	mu   sync.Mutex
	log  []string
}

// add counts a round trip; query is empty for begin, commit and rollback.
func (r *recorder) add(kind, query string) {
	r.n.Add(1)
	if r.keep {
		if query != "" {
			kind += " " + query
		}
		r.mu.Lock()
		r.log = append(r.log, kind)
		r.mu.Unlock()
	}
}

// take returns the kept log and starts a new one.
func (r *recorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	log := r.log
	r.log = nil
	return log
}

func (r *recorder) Exec(ctx context.Context, query string, args, v any) error {
	r.add("exec", query)
	return r.Driver.Exec(ctx, query, args, v)
}

func (r *recorder) Query(ctx context.Context, query string, args, v any) error {
	r.add("query", query)
	return r.Driver.Query(ctx, query, args, v)
}

func (r *recorder) Tx(ctx context.Context) (dialect.Tx, error) {
	r.add("begin", "")
	tx, err := r.Driver.Tx(ctx)
	if err != nil {
		return nil, err
	}
	return recordingTx{tx, r}, nil
}

type recordingTx struct {
	dialect.Tx
	r *recorder
}

func (t recordingTx) Exec(ctx context.Context, query string, args, v any) error {
	t.r.add("exec", query)
	return t.Tx.Exec(ctx, query, args, v)
}

func (t recordingTx) Query(ctx context.Context, query string, args, v any) error {
	t.r.add("query", query)
	return t.Tx.Query(ctx, query, args, v)
}

func (t recordingTx) Commit() error {
	t.r.add("commit", "")
	return t.Tx.Commit()
}

func (t recordingTx) Rollback() error {
	t.r.add("rollback", "")
	return t.Tx.Rollback()
}
