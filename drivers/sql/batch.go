package sqlstore

import (
	"context"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"strconv"
	"unicode/utf16"

	"github.com/leasehold/leasehold/core"
)

// MaxBatch implements [core.BatchRenewer]: the most leases one
// [Store.RenewBatch] call takes, 1000 on every dialect. The leases of a
// call travel as one parameter, so no database's limit on parameters
// applies; 1000 leases with the longest keys and owner ids make under 5 MB
// of it, within MySQL's and MariaDB's default max_allowed_packet (64 MB
// and 16 MB).
func (s *Store) MaxBatch() int { return s.d.maxBatch }

// RenewBatch implements [core.BatchRenewer]: it renews each lease as
// [Store.Renew] would, and answers each, in order.
//
//   - PostgreSQL and SQLite: one statement, an UPDATE that joins the
//     table to the leases and returns the rows it renewed. One round trip.
//   - MySQL/MariaDB, which have no UPDATE ... RETURNING: two statements,
//     no transaction. An UPDATE renews the live leases and marks their
//     rows with a number drawn for the call; a SELECT reads the marked
//     rows back. Two round trips (four when the client prepares each
//     statement first, as go-sql-driver/mysql does without
//     interpolateParams). A deadlock is retried a few times, like
//     Acquire's.
//
// The leases are one parameter, a JSON array, in every placeholder style.
// More than [Store.MaxBatch] leases is an error matching
// [core.ErrInvalidArgument]; an error fails the whole batch, and any lease
// of it may or may not have been renewed.
func (s *Store) RenewBatch(ctx context.Context, leases []core.Lease) ([]bool, error) {
	if err := s.checkCtx(ctx); err != nil {
		return nil, err
	}
	if len(leases) > s.MaxBatch() {
		return nil, fmt.Errorf("%s: %d leases in one batch, more than MaxBatch %d: %w", s.name, len(leases), s.MaxBatch(), core.ErrInvalidArgument)
	}
	renewed := make([]bool, len(leases))
	if len(leases) == 0 {
		return renewed, nil
	}
	var (
		held map[holding]bool
		err  error
	)
	if s.st.renewBatch.sql != "" {
		held, err = s.renewBatchOnce(ctx, leases)
	} else {
		held, err = s.renewBatchMarked(ctx, leases)
	}
	if err != nil {
		return nil, s.fail(err)
	}
	for i, l := range leases {
		renewed[i] = held[holding{l.Key, l.Owner}]
	}
	return renewed, nil
}

// holding is a key and the owner a row says holds it.
type holding struct{ key, owner string }

// scanHoldings returns a scan function that adds each row's key and owner
// to held.
func scanHoldings(held map[holding]bool) func(Row) error {
	return func(r Row) error {
		var h holding
		if err := r.Scan(&h.key, &h.owner); err != nil {
			return err
		}
		held[h] = true
		return nil
	}
}

// renewBatchOnce is the one statement batch of PostgreSQL and SQLite: it
// returns the leases it renewed.
func (s *Store) renewBatchOnce(ctx context.Context, leases []core.Lease) (map[holding]bool, error) {
	held := make(map[holding]bool, len(leases))
	st := s.st.renewBatch
	err := s.exec.Query(ctx, st.sql, st.args(values{batch: batchJSON(leases, s.d.batchHex)}), scanHoldings(held))
	return held, err
}

// renewBatchMarked is MySQL's batch (see mysqlTemplates): one statement
// renews the live leases and marks their rows, a second reads the marked
// rows. A deadlock of the first is retried a few times, like Acquire's.
func (s *Store) renewBatchMarked(ctx context.Context, leases []core.Lease) (map[holding]bool, error) {
	v := values{batch: batchJSON(leases, s.d.batchHex), mark: rand.Int64N(1<<62-1) + 1}
	renew := s.st.renewMarked
	err := s.retryTx(ctx, func() error {
		_, err := s.exec.Exec(ctx, renew.sql, renew.args(v))
		return err
	})
	if err != nil {
		return nil, err
	}
	held := make(map[holding]bool, len(leases))
	read := s.st.readMarked
	err = s.exec.Query(ctx, read.sql, read.args(v), scanHoldings(held))
	return held, err
}

// batchJSON encodes leases as the JSON array the batch statements read:
// [["key","owner",ttlMillis],...]. Strings are written in ASCII, with \u
// escapes for everything else, so that no client or connection character
// set can alter them on the way; with hexStrings, as the hex of their
// bytes instead.
func batchJSON(leases []core.Lease, hexStrings bool) string {
	b := make([]byte, 0, 64*len(leases))
	b = append(b, '[')
	for i, l := range leases {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '[')
		b = appendJSONString(b, l.Key, hexStrings)
		b = append(b, ',')
		b = appendJSONString(b, l.Owner, hexStrings)
		b = append(b, ',')
		b = strconv.AppendInt(b, l.TTL.Milliseconds(), 10)
		b = append(b, ']')
	}
	return string(append(b, ']'))
}

// appendJSONString appends s as a JSON string of ASCII characters, or of
// the hex of its bytes.
func appendJSONString(b []byte, s string, hexString bool) []byte {
	b = append(b, '"')
	if hexString {
		b = hex.AppendEncode(b, []byte(s))
		return append(b, '"')
	}
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b = append(b, '\\', byte(r))
		case r >= 0x20 && r < 0x7f:
			b = append(b, byte(r))
		case r > 0xffff:
			hi, lo := utf16.EncodeRune(r)
			b = appendEscape(appendEscape(b, hi), lo)
		default:
			b = appendEscape(b, r)
		}
	}
	return append(b, '"')
}

// appendEscape appends \uXXXX for r, at most 0xffff.
func appendEscape(b []byte, r rune) []byte {
	const digits = "0123456789abcdef"
	return append(b, '\\', 'u', digits[r>>12&0xf], digits[r>>8&0xf], digits[r>>4&0xf], digits[r&0xf])
}
