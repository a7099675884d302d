package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/uptrace/bun"

	"github.com/leasehold/leasehold/core"
	bunstore "github.com/leasehold/leasehold/drivers/bun"
	sqlstore "github.com/leasehold/leasehold/drivers/sql"
)

// exactKeys are keys that client-side formatting could get wrong: quoting,
// escapes, bun's own placeholder syntax, the server's, LIKE patterns, and
// pairs that a folding, padding or escaping comparison would make one.
var exactKeys = []string{
	strings.Repeat("😀", core.MaxKeyLength), // 2000 bytes
	`'`, `''`, `it's`, `"quoted"`, "`backquoted`",
	`\`, `\\`, `\'`, `a\b`, "a\b", `\0`, `\x00`, `\n`, "a\nb", "tab\there", `\u0041`, "A",
	`?`, `??`, `?0`, `?1`, `?name`, `?TableName`, `?(name)`, `\?`, `(?)`, `?'`,
	`$1`, `$$`, `$1$`, `%`, `%s`, `_`, `a_b`, `a%b`, `*`, `--`, `/*`, `;`,
	`E'x'`, `X'00'`, `U&'\0041'`,
	"Export", "export", "EXPORT", "a", "a ", "a  ", " a",
	"é", "e\u0301", "ß", "ss", "ﬁ", "fi",
}

func keySpecs(s *server) {
	It("survive bun's formatting byte for byte", func() {
		expectExactKeys(GinkgoTB(), s, s.open, "exact_keys", false)
	})
	if s.hostile != nil {
		It("survive bun's formatting under the session setting that changes plain literals", func() {
			expectExactKeys(GinkgoTB(), s, s.hostile, "exact_keys_hostile", true)
		})
	}
	It("that bun's formatting would change are refused, and lock nothing", func() {
		t := GinkgoTB()
		ctx := specContext()
		st, _ := s.store(t)
		ref := s.ref(t)
		// bun drops NUL and writes U+FFFD for invalid UTF-8: each bad key
		// would have locked the other one.
		for bad, other := range map[string]string{"nul\x00key": "nulkey", "bad\xffkey": "bad\uFFFDkey"} {
			_, _, err := st.Acquire(ctx, bad, "bun", time.Minute)
			Expect(err).To(MatchError(core.ErrInvalidArgument))
			_, ok, err := ref.Acquire(ctx, other, "ref", time.Minute)
			Expect(err).NotTo(HaveOccurred())
			Expect(ok).To(BeTrue(), "%q was locked by the refused %q", other, bad)
		}
	})
}

// expectExactKeys takes every key of exactKeys through a bun store opened
// by open, and checks against a database/sql store on the same table, with
// bound arguments, that each key is its own lock, held under exactly that
// string. With hostile, open's sessions must read bun's plain literals of
// backslashes as other strings.
func expectExactKeys(t testing.TB, s *server, open func(testing.TB, string) *bun.DB, table string, hostile bool) {
	ctx := specContext()
	db := open(t, s.dsn)
	var plain string
	Expect(db.NewRaw("SELECT ?", `a\b`).Scan(ctx, &plain)).To(Succeed())
	if hostile {
		Expect(plain).NotTo(Equal(`a\b`), "the session setting did not take: bun's own literal read back unchanged")
	} else {
		Expect(plain).To(Equal(`a\b`))
	}
	st, err := bunstore.New(db, sqlstore.WithTable(table))
	Expect(err).NotTo(HaveOccurred())
	Expect(st.Migrate(ctx)).To(Succeed())
	ref := s.ref(t, sqlstore.WithTable(table))

	tokens := map[string]int64{}
	for i, key := range exactKeys {
		// All at once: two keys that the formatting made one would collide.
		token, ok, err := st.Acquire(ctx, key, owner(i), time.Minute)
		Expect(err).NotTo(HaveOccurred(), "key %q", key)
		Expect(ok).To(BeTrue(), "key %q is held already", key)
		tokens[key] = token
	}
	for i, key := range exactKeys {
		// The database holds the lock under the caller's string, as a
		// client with bound arguments reads and writes it.
		expectListed(ctx, ref, key, owner(i), tokens[key])
		expectListed(ctx, st, key, owner(i), tokens[key])
		_, ok, err := ref.Acquire(ctx, key, "ref", time.Minute)
		Expect(err).NotTo(HaveOccurred())
		Expect(ok).To(BeFalse(), "key %q: free for a client with bound arguments", key)

		Expect(st.Renew(ctx, key, owner(i), time.Minute)).To(BeTrue(), "renew %q", key)
		Expect(st.Release(ctx, key, owner(i))).To(BeTrue(), "release %q", key)
		token, ok, err := ref.Acquire(ctx, key, "ref", time.Minute)
		Expect(err).NotTo(HaveOccurred())
		Expect(ok).To(BeTrue(), "key %q: still held after bun's release", key)
		Expect(token).To(BeNumerically(">", tokens[key]), "key %q: the floor was not kept", key)
	}
}

func owner(i int) string { return fmt.Sprintf("bun-%d", i) }

// expectListed checks that lister lists key, held by owner with token.
func expectListed(ctx context.Context, lister core.Lister, key, owner string, token int64) {
	GinkgoHelper()
	infos, err := lister.List(ctx, key)
	Expect(err).NotTo(HaveOccurred())
	for _, li := range infos {
		if li.Key == key {
			Expect(li.Owner).To(Equal(owner), "key %q", key)
			Expect(li.Token).To(Equal(token), "key %q", key)
			return
		}
	}
	Fail(fmt.Sprintf("%v does not list key %q under its prefix: %+v", lister, key, infos))
}
