package sqlstore

import (
	"context"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/leasehold/leasehold/core"
)

// awkward are keys and owners that a careless encoding would alter.
var awkward = []string{`plain`, `quote " and \ backslash`, "tab\tnewline\n\x01\x1f\x7f", "é, ß, 中文", "emoji 😀 and 𝄞", "<>&'", "\u2028\u2029", strings.Repeat("ü", 500)}

// The batch's JSON is ASCII, and decodes to exactly the leases' strings
// (or to the hex of their bytes) and ttls.
func TestBatchJSON(t *testing.T) {
	var leases []core.Lease
	for i, k := range awkward {
		leases = append(leases, core.Lease{Key: k, Owner: awkward[len(awkward)-1-i], TTL: time.Duration(i+1) * 1500 * time.Millisecond})
	}
	leases = append(leases, core.Lease{Key: "four weeks", Owner: "o", TTL: 28 * 24 * time.Hour})
	for _, hexStrings := range []bool{false, true} {
		doc := batchJSON(leases, hexStrings)
		for _, c := range []byte(doc) {
			if c < 0x20 || c >= 0x7f {
				t.Fatalf("hex %v: byte %#x in %q; want ASCII only", hexStrings, c, doc)
			}
		}
		var got [][]any
		d := json.NewDecoder(strings.NewReader(doc))
		d.UseNumber()
		if err := d.Decode(&got); err != nil {
			t.Fatalf("hex %v: %q does not decode: %v", hexStrings, doc, err)
		}
		if len(got) != len(leases) {
			t.Fatalf("hex %v: %d entries for %d leases", hexStrings, len(got), len(leases))
		}
		for i, l := range leases {
			key, owner := l.Key, l.Owner
			if hexStrings {
				key, owner = hex.EncodeToString([]byte(key)), hex.EncodeToString([]byte(owner))
			}
			if got[i][0] != key || got[i][1] != owner || got[i][2] != json.Number(strconv.FormatInt(l.TTL.Milliseconds(), 10)) {
				t.Fatalf("hex %v: entry %d decodes to %q; want %q, %q, %d", hexStrings, i, got[i], key, owner, l.TTL.Milliseconds())
			}
		}
	}
	if got := batchJSON(nil, false); got != "[]" {
		t.Fatalf("empty batch: %q", got)
	}
}

// batchLeases are the leases of the tests below: a key twice with other
// owners, and one lease twice.
var batchLeases = []core.Lease{
	{Key: "a", Owner: "o1", TTL: time.Minute},
	{Key: "b", Owner: "o1", TTL: time.Minute},
	{Key: "c", Owner: "o1", TTL: 2 * time.Minute},
	{Key: "b", Owner: "o2", TTL: time.Minute},
	{Key: "a", Owner: "o1", TTL: time.Minute},
	{Key: "d", Owner: "o1", TTL: time.Minute},
}

// The database renews a and c for o1, and b for o2.
var batchRows = []row{{"a", "o1"}, {"c", "o1"}, {"b", "o2"}}

var batchAnswers = []bool{true, false, true, true, true, false}

// On PostgreSQL and SQLite a batch is one statement, in every placeholder
// style, whose rows answer each lease by its key and owner.
func TestRenewBatchOneStatement(t *testing.T) {
	for _, d := range []Dialect{Postgres, SQLite} {
		for _, p := range []Placeholder{Dollar, Question, NumberedQuestion} {
			f := &fakeExec{query: func(_ string, scan func(Row) error) error {
				for _, r := range batchRows {
					if err := scan(r); err != nil {
						return err
					}
				}
				return nil
			}}
			s, err := NewWithExecutor(f, d, WithPlaceholder(p))
			if err != nil {
				t.Fatal(err)
			}
			got, err := s.RenewBatch(context.Background(), batchLeases)
			if err != nil || !slices.Equal(got, batchAnswers) {
				t.Fatalf("%v %v: RenewBatch = %v, %v; want %v", d, p, got, err, batchAnswers)
			}
			if len(f.stmts) != 1 || f.stmts[0] != s.st.renewBatch.sql || len(f.args[0]) != 1 || f.args[0][0] != batchJSON(batchLeases, false) {
				t.Fatalf("%v %v: ran %q with %q; want the batch statement once, with the leases as one JSON argument", d, p, f.stmts, f.args)
			}
		}
	}
}

// On MySQL a batch is two statements and no transaction: the update
// renews the live leases and marks them with a number drawn for the call,
// retried after a deadlock; the read returns the rows with that mark.
func TestRenewBatchMySQL(t *testing.T) {
	deadlock := &mysql.MySQLError{Number: 1213}
	for _, tc := range []struct {
		name     string
		rows     []row
		execErr  []error // the update's error, per attempt
		readErr  error
		want     []bool
		wantErr  bool
		attempts int
	}{
		{name: "mixed", rows: batchRows, want: batchAnswers, attempts: 1},
		{name: "none held", rows: nil, want: make([]bool, len(batchLeases)), attempts: 1},
		{name: "deadlock, then done", rows: batchRows, execErr: []error{deadlock, deadlock}, want: batchAnswers, attempts: 3},
		{name: "deadlock every time", rows: batchRows, execErr: slices.Repeat([]error{deadlock}, 10), wantErr: true, attempts: txAttempts},
		{name: "lost connection", rows: batchRows, execErr: []error{errors.New("connection reset")}, wantErr: true, attempts: 1},
		{name: "read fails", rows: batchRows, readErr: errors.New("connection reset"), wantErr: true, attempts: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeTx{}
			attempt := 0
			f.exec = func(string) (sql.Result, error) {
				attempt++
				if attempt <= len(tc.execErr) {
					return nil, tc.execErr[attempt-1]
				}
				return result{int64(len(tc.rows)), 0}, nil
			}
			f.query = func(q string, scan func(Row) error) error {
				if tc.readErr != nil {
					return tc.readErr
				}
				for _, r := range tc.rows {
					if err := scan(r); err != nil {
						return err
					}
				}
				return nil
			}
			s, err := NewWithExecutor(f, MySQL)
			if err != nil {
				t.Fatal(err)
			}
			got, err := s.RenewBatch(context.Background(), batchLeases)
			if (err != nil) != tc.wantErr || !tc.wantErr && !slices.Equal(got, tc.want) || attempt != tc.attempts || f.began != 0 {
				t.Fatalf("RenewBatch = %v, %v in %d updates and %d transactions; want %v (error %v) in %d updates and none", got, err, attempt, f.began, tc.want, tc.wantErr, tc.attempts)
			}
			if tc.wantErr {
				if got != nil || !strings.HasPrefix(err.Error(), "sqlstore: ") {
					t.Fatalf("failed batch answered %v, error %v; want no answers and the store's prefix", got, err)
				}
				return
			}
			want := slices.Repeat([]string{s.st.renewMarked.sql}, tc.attempts)
			want = append(want, s.st.readMarked.sql)
			if !slices.Equal(f.stmts, want) {
				t.Fatalf("ran %q; want the marking update (%d times), then the read", f.stmts, tc.attempts)
			}
			update, read := f.args[0], f.args[len(f.args)-1]
			mark, ok := update[1].(int64)
			if update[0] != batchJSON(batchLeases, true) || read[0] != update[0] || !ok || mark < 1 || mark >= 1<<62 || read[1] != mark {
				t.Fatalf("updated with %q and read with %q; want every lease in hex, and one mark in [1, 2^62) for both", update, read)
			}
		})
	}
}

func TestRenewBatchLimits(t *testing.T) {
	for _, d := range []Dialect{Postgres, MySQL, SQLite} {
		f := &fakeTx{}
		s, err := NewWithExecutor(f, d, WithName("gormstore"))
		if err != nil {
			t.Fatal(err)
		}
		if s.MaxBatch() < 1 {
			t.Fatalf("%v: MaxBatch %d", d, s.MaxBatch())
		}
		_, err = s.RenewBatch(context.Background(), make([]core.Lease, s.MaxBatch()+1))
		if !errors.Is(err, core.ErrInvalidArgument) || !strings.HasPrefix(err.Error(), "gormstore: ") {
			t.Fatalf("%v: batch over MaxBatch: %v", d, err)
		}
		if got, err := s.RenewBatch(context.Background(), nil); err != nil || len(got) != 0 {
			t.Fatalf("%v: empty batch: %v, %v", d, got, err)
		}
		if len(f.stmts) != 0 {
			t.Fatalf("%v: ran %q for batches it refused or that were empty", d, f.stmts)
		}
		f.query = func(string, func(Row) error) error {
			return &mysql.MySQLError{Number: 1146, Message: "Table 'test.leasehold_locks' doesn't exist"}
		}
		if _, err := s.RenewBatch(context.Background(), batchLeases); !errors.Is(err, ErrNotMigrated) || strings.Count(err.Error(), "gormstore") != 1 {
			t.Fatalf("%v: batch on a missing table: %v", d, err)
		}
	}
}
