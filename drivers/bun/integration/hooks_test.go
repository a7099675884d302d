package integration

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/uptrace/bun"

	sqlstore "github.com/leasehold/leasehold/drivers/sql"
)

// recorder is a bun.QueryHook that keeps every query it sees.
type recorder struct {
	mu     sync.Mutex
	events []seen
}

// seen is what a hook saw of one query.
type seen struct {
	template, query string
	args            []any
	err             error
	// traced says the caller's context reached the hook.
	traced bool
}

type traceKey struct{}

func (r *recorder) BeforeQuery(ctx context.Context, _ *bun.QueryEvent) context.Context { return ctx }

func (r *recorder) AfterQuery(ctx context.Context, e *bun.QueryEvent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, seen{
		template: e.QueryTemplate, query: e.Query, args: e.QueryArgs, err: e.Err,
		traced: ctx.Value(traceKey{}) != nil,
	})
}

// take returns the queries seen since the last take.
func (r *recorder) take() []seen {
	r.mu.Lock()
	defer r.mu.Unlock()
	ev := r.events
	r.events = nil
	return ev
}

// counter is a bun.QueryHook that counts queries: statements per operation
// in the benchmarks.
type counter struct{ n atomic.Int64 }

func (c *counter) BeforeQuery(ctx context.Context, _ *bun.QueryEvent) context.Context { return ctx }
func (c *counter) AfterQuery(context.Context, *bun.QueryEvent)                        { c.n.Add(1) }

func hookSpecs(s *server) {
	It("see every statement of acquire, renew and release, with the caller's context", func() {
		ctx := context.WithValue(specContext(), traceKey{}, true)
		st, db := s.store(GinkgoTB())
		rec := &recorder{}
		db.AddQueryHook(rec)
		// MySQL acquires in a transaction: BEGIN, ensure the row, lock
		// it, draw the token, take the lock, COMMIT; a held key rolls back
		// after the lock.
		// PostgreSQL's acquire and release are each one statement with a
		// CTE (the acquire answers the holder's time left; the release
		// notifies).
		acquire, held, release := []string{"INSERT"}, []string{"INSERT"}, []string{"UPDATE"}
		switch s.dialect.String() {
		case sqlstore.MySQL.String():
			acquire = []string{"BEGIN", "INSERT", "SELECT", "UPDATE", "UPDATE", "COMMIT"}
			held = []string{"BEGIN", "INSERT", "SELECT", "ROLLBACK"}
		case sqlstore.Postgres.String():
			acquire, held, release = []string{"WITH a AS (\nINSERT"}, []string{"WITH a AS (\nINSERT"}, []string{"WITH r AS (\nUPDATE"}
		}

		_, ok, err := st.Acquire(ctx, "hook", "owner", time.Minute)
		Expect(err).NotTo(HaveOccurred())
		Expect(ok).To(BeTrue())
		expectStatements(rec.take(), acquire, s.hookLiteral)

		Expect(st.Renew(ctx, "hook", "owner", time.Minute)).To(BeTrue())
		expectStatements(rec.take(), []string{"UPDATE"}, s.hookLiteral)

		_, ok, err = st.Acquire(ctx, "hook", "other", time.Minute)
		Expect(err).NotTo(HaveOccurred())
		Expect(ok).To(BeFalse())
		expectStatements(rec.take(), held, s.hookLiteral)

		Expect(st.Release(ctx, "hook", "owner")).To(BeTrue())
		expectStatements(rec.take(), release, s.hookLiteral)
	})
}

// expectStatements checks that the hook saw one query per verb, in order,
// each without error and with the caller's context, and that the statements
// that carry the key show it as literal.
func expectStatements(got []seen, verbs []string, literal string) {
	GinkgoHelper()
	Expect(got).To(HaveLen(len(verbs)), "queries: %+v", got)
	var withKey int
	for i, e := range got {
		Expect(strings.TrimSpace(e.template)).To(HavePrefix(verbs[i]))
		Expect(e.err).NotTo(HaveOccurred())
		Expect(e.traced).To(BeTrue(), "%s: the hook did not get the caller's context", e.template)
		if len(e.args) == 0 {
			Expect(e.query).To(Equal(e.template))
			continue
		}
		// Every placeholder was filled in by bun.
		Expect(strings.Count(e.template, "?")).To(Equal(len(e.args)))
		Expect(e.query).NotTo(ContainSubstring("?"))
		if strings.Contains(e.query, literal) {
			withKey++
		}
	}
	Expect(withKey).To(BeNumerically(">", 0), "no statement shows the key as %s", literal)
}
