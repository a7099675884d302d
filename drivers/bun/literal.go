package bunstore

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/uptrace/bun/schema"

	"github.com/leasehold/leasehold/core"
)

// pgString is a string that bun writes as a PostgreSQL escape string,
// E'...'. Backslashes and quotes are doubled; nothing else is escaped. An
// escape string means the same whatever standard_conforming_strings says,
// where a plain '...' does not.
type pgString string

var _ schema.QueryAppender = pgString("")

// AppendQuery implements bun's schema.QueryAppender.
func (s pgString) AppendQuery(_ schema.QueryGen, b []byte) ([]byte, error) {
	b = append(b, "E'"...)
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\'', '\\':
			b = append(b, c, c)
		default:
			b = append(b, c)
		}
	}
	return append(b, '\''), nil
}

// checkExact refuses a string that bun's formatting would change: bun
// writes each invalid UTF-8 byte as U+FFFD and drops NUL bytes, so the
// statement would lock another key than the caller's.
func checkExact(s string) error {
	switch {
	case !utf8.ValidString(s):
		return fmt.Errorf("%q is not valid UTF-8, and bun, which formats arguments into the SQL text, would send another string: %w", s, core.ErrInvalidArgument)
	case strings.IndexByte(s, 0) >= 0:
		return fmt.Errorf("%q holds a NUL byte, which bun, which formats arguments into the SQL text, would drop: %w", s, core.ErrInvalidArgument)
	}
	return nil
}
