package integration

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/uptrace/bun/dialect/mysqldialect"
	"github.com/uptrace/bun/dialect/pgdialect"
	"github.com/uptrace/bun/dialect/sqlitedialect"
	"github.com/uptrace/bun/schema"

	sqlstore "github.com/leasehold/leasehold/drivers/sql"
)

// statementLog is a sqlstore.Transactor without a database: it records
// every statement, and answers so that each operation takes every path
// (MySQL's acquire finds its key free, and draws token 1).
type statementLog struct {
	queries []string
	args    [][]any
}

type result struct{}

func (result) LastInsertId() (int64, error) { return 1, nil }
func (result) RowsAffected() (int64, error) { return 1, nil }

type zeroRow struct{}

// Scan sets every column to 0: a token floor of 0, a key not held.
func (zeroRow) Scan(dest ...any) error {
	for _, d := range dest {
		p, ok := d.(*int64)
		if !ok {
			return fmt.Errorf("statementLog: cannot scan into %T", d)
		}
		*p = 0
	}
	return nil
}

func (l *statementLog) Exec(_ context.Context, query string, args []any) (sql.Result, error) {
	l.queries = append(l.queries, query)
	l.args = append(l.args, args)
	return result{}, nil
}

func (l *statementLog) Query(_ context.Context, query string, args []any, scan func(sqlstore.Row) error) error {
	l.queries = append(l.queries, query)
	l.args = append(l.args, args)
	if strings.HasPrefix(strings.TrimSpace(query), "SELECT lock_key") {
		return nil // List: no locks
	}
	return scan(zeroRow{})
}

func (l *statementLog) InTx(_ context.Context, fn func(sqlstore.Executor) error) error { return fn(l) }

// TestStatementsAreSafeForBun renders every statement of every dialect with
// '?' placeholders, as the bun driver runs them, and checks that bun's
// formatter reads each '?' as the next positional argument: bun takes
// '?name', '?0' and '?(name)' for its own arguments, and '\?' for a literal
// '?'. Statements without arguments must hold no '?' at all, since bun
// parses them too once the application registers a named argument.
func TestStatementsAreSafeForBun(t *testing.T) {
	for _, c := range []struct {
		dialect sqlstore.Dialect
		bun     schema.Dialect
		// withArgs counts the statements with arguments: acquire's (four on
		// MySQL: ensure, lock, draw, take), renew, release and list.
		withArgs int
	}{
		{sqlstore.Postgres, pgdialect.New(), 4},
		{sqlstore.MySQL, mysqldialect.New(), 7},
		{sqlstore.SQLite, sqlitedialect.New(), 4},
	} {
		t.Run(c.dialect.String(), func(t *testing.T) {
			log := &statementLog{}
			s, err := sqlstore.NewWithExecutor(log, c.dialect, sqlstore.WithPlaceholder(sqlstore.Question))
			if err != nil {
				t.Fatal(err)
			}
			ctx := t.Context()
			for _, op := range []func() error{
				func() error { return s.Migrate(ctx) },
				func() error { _, _, err := s.Acquire(ctx, "k", "o", time.Minute); return err },
				func() error { _, err := s.Renew(ctx, "k", "o", time.Minute); return err },
				func() error { _, err := s.Release(ctx, "k", "o"); return err },
				func() error { _, err := s.List(ctx, "k"); return err },
				func() error { return s.ResetTokens(ctx) },
			} {
				if err := op(); err != nil {
					t.Fatal(err)
				}
			}
			drop, err := sqlstore.DropSQL(c.dialect, s.Table())
			if err != nil {
				t.Fatal(err)
			}
			for _, q := range drop {
				log.Exec(ctx, q, nil) //nolint:errcheck // records only
			}

			gen := schema.NewQueryGen(c.bun)
			var withArgs int
			for i, q := range log.queries {
				args := log.args[i]
				if n := strings.Count(q, "?"); n != len(args) {
					t.Errorf("%d '?' for %d arguments in:\n%s", n, len(args), q)
					continue
				}
				for j := strings.IndexByte(q, '?'); j >= 0; j = nextMark(q, j) {
					if next := byteAt(q, j+1); next != 0 && !strings.ContainsRune("), \n*", rune(next)) || byteAt(q, j-1) == '\\' {
						t.Errorf("'?' at %d is followed by %q or escaped, which bun parses as its own syntax:\n%s", j, next, q)
					}
				}
				if len(args) == 0 {
					continue
				}
				withArgs++
				// bun fills every '?' in order, as plain positional arguments.
				marks := make([]any, len(args))
				want := q
				for k := range args {
					marks[k] = fmt.Sprintf("mark%d", k)
					want = strings.Replace(want, "?", "'"+marks[k].(string)+"'", 1)
				}
				if got := gen.FormatQuery(q, marks...); got != want {
					t.Errorf("bun formats\n%s\nas\n%s\nwant\n%s", q, got, want)
				}
			}
			if withArgs != c.withArgs {
				t.Errorf("%d statements with arguments recorded, want %d: %q", withArgs, c.withArgs, log.queries)
			}
		})
	}
}

func nextMark(q string, j int) int {
	k := strings.IndexByte(q[j+1:], '?')
	if k < 0 {
		return -1
	}
	return j + 1 + k
}

// byteAt returns q[i], or 0 outside q.
func byteAt(q string, i int) byte {
	if i < 0 || i >= len(q) {
		return 0
	}
	return q[i]
}
