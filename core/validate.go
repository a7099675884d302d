package core

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// MaxKeyLength is the longest key, in characters (runes), that every store accepts.
const MaxKeyLength = 500

// ValidateKey reports, as an error matching [ErrInvalidKey], why key cannot be
// a lock key: empty, over [MaxKeyLength] characters, not valid UTF-8, or
// holding a NUL byte (which several databases truncate at).
func ValidateKey(key string) error {
	switch {
	case key == "":
		return fmt.Errorf("%w: empty", ErrInvalidKey)
	case !utf8.ValidString(key):
		return fmt.Errorf("%w: %q is not valid UTF-8", ErrInvalidKey, key)
	case strings.IndexByte(key, 0) >= 0:
		return fmt.Errorf("%w: %q holds a NUL byte", ErrInvalidKey, key)
	case utf8.RuneCountInString(key) > MaxKeyLength:
		return fmt.Errorf("%w: %d characters, more than %d", ErrInvalidKey, utf8.RuneCountInString(key), MaxKeyLength)
	}
	return nil
}

// ValidateTTL reports, as an error matching [ErrInvalidTTL], why ttl cannot be
// a lock's ttl. Stores count in whole milliseconds, so a ttl must be at least
// 1ms and a whole number of milliseconds: it is refused rather than rounded,
// because a silent rounding would change how long a lock outlives its holder.
func ValidateTTL(ttl time.Duration) error {
	if ttl < time.Millisecond || ttl%time.Millisecond != 0 {
		return fmt.Errorf("%w: %v (want a whole number of milliseconds, at least 1ms)", ErrInvalidTTL, ttl)
	}
	return nil
}
