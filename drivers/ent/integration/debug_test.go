package integration

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"

	"entgo.io/ent/dialect"
	entsql "entgo.io/ent/dialect/sql"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	entstore "github.com/leasehold/leasehold/drivers/ent"
	"github.com/leasehold/leasehold/drivers/ent/integration/example/ent"
)

// debugSpecs check that a store on a dialect.Debug driver sends every
// statement through it: whatever reaches the driver below Debug, Debug
// logged first, in the same order. And that a store on a client built on
// that driver sends the same statements through it.
func debugSpecs(s server, shared func() *entsql.Driver) {
	var sent []string // by New, for NewFromClient to compare
	It("sends every statement through a dialect.Debug driver", func(ctx SpecContext) {
		below := &recorder{Driver: shared(), keep: true}
		debug, logged := debugDriver(below)
		store, err := entstore.New(debug)
		Expect(err).NotTo(HaveOccurred())

		everyOperation(ctx, store)

		sent = below.take()
		Expect(sent).To(ContainElement(HavePrefix("query ")))
		Expect(sent).To(ContainElement(HavePrefix("exec ")))
		if s.dialect != dialect.SQLite { // transactions: Migrate, MySQL's acquire
			Expect(sent).To(ContainElements("begin", "commit"))
		}
		if s.dialect == dialect.MySQL { // the acquire of a held key
			Expect(sent).To(ContainElement("rollback"))
		}
		Expect(logged()).To(Equal(sent))
	})

	It("sends the same statements through the client's driver from NewFromClient", func(ctx SpecContext) {
		Expect(sent).NotTo(BeEmpty(), "the spec before this one records what New sends")
		debug, logged := debugDriver(shared())
		store, err := entstore.NewFromClient(ent.NewClient(ent.Driver(debug)), s.dialect)
		Expect(err).NotTo(HaveOccurred())

		everyOperation(ctx, store)

		Expect(logged()).To(Equal(sent))
	})
}

// debugDriver wraps drv with dialect.Debug, and returns what it logged so
// far, in the recorder's words.
func debugDriver(drv dialect.Driver) (dialect.Driver, func() []string) {
	var (
		mu    sync.Mutex
		lines []string
	)
	debug := dialect.Debug(drv, func(v ...any) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, fmt.Sprint(v...))
	})
	return debug, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return debugged(lines)
	}
}

// everyOperation calls each method of store that sends statements, on
// both outcomes where there are two.
func everyOperation(ctx context.Context, store *entstore.Store) {
	GinkgoHelper()
	key := fmt.Sprintf("every-operation:%d", time.Now().UnixNano())
	Expect(store.Migrate(ctx)).To(Succeed())
	_, ok, err := store.Acquire(ctx, key, "a", time.Minute)
	Expect(err).NotTo(HaveOccurred())
	Expect(ok).To(BeTrue())
	_, ok, err = store.Acquire(ctx, key, "b", time.Minute)
	Expect(err).NotTo(HaveOccurred())
	Expect(ok).To(BeFalse())
	Expect(store.Renew(ctx, key, "a", time.Minute)).To(BeTrue())
	Expect(store.Renew(ctx, key, "b", time.Minute)).To(BeFalse())
	Expect(store.List(ctx, key)).To(HaveLen(1))
	Expect(store.Release(ctx, key, "b")).To(BeFalse())
	Expect(store.Release(ctx, key, "a")).To(BeTrue())
	Expect(store.ResetTokens(ctx)).To(Succeed())
}

var (
	debugStatement = regexp.MustCompile(`(?s)^(?:driver|Tx\([^)]*\))\.(Exec|Query)(?:Context)?: query=(.*) args=\[.*\]$`)
	debugTx        = regexp.MustCompile(`^(?:driver\.Tx|Tx)\([^)]*\): (started|committed|rollbacked)$`)
	debugTxWord    = map[string]string{"started": "begin", "committed": "commit", "rollbacked": "rollback"}
)

// debugged turns dialect.Debug's log lines into the recorder's words.
func debugged(lines []string) []string {
	var out []string
	for _, l := range lines {
		if m := debugStatement.FindStringSubmatch(l); m != nil {
			out = append(out, strings.ToLower(m[1])+" "+m[2])
		} else if m := debugTx.FindStringSubmatch(l); m != nil {
			out = append(out, debugTxWord[m[1]])
		} else {
			out = append(out, "unexpected log line: "+l)
		}
	}
	return out
}
