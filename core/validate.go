package core

import (
	"context"
	"fmt"
	"reflect"
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

// ValidateContext reports a nil ctx as an error matching
// [ErrInvalidArgument]. Every method of leasehold that takes a context
// refuses a nil one this way instead of panicking; stores may call it at
// their entry points.
func ValidateContext(ctx context.Context) error {
	if ctx == nil {
		return fmt.Errorf("%w: nil context.Context", ErrInvalidArgument)
	}
	return nil
}

// ValidateHandle reports, as an error matching [ErrInvalidArgument] that
// names what, a handle that cannot be used because it is nil: a nil
// interface, or an interface holding a nil pointer, map, slice, channel or
// function (a typed nil, such as a (*pgxpool.Pool)(nil) passed as an
// interface). Drivers check their handles with it in their constructors.
func ValidateHandle(what string, h any) error {
	if h == nil {
		return fmt.Errorf("%w: nil %s", ErrInvalidArgument, what)
	}
	switch v := reflect.ValueOf(h); v.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Chan, reflect.Func, reflect.Interface, reflect.UnsafePointer:
		if v.IsNil() {
			return fmt.Errorf("%w: nil %s (%T)", ErrInvalidArgument, what, h)
		}
	}
	return nil
}

// validStore reports a store [New] cannot use: nil, a typed nil, or one
// whose Valid method (see [Validator]) says it cannot work.
func validStore(store LockStore) error {
	if err := ValidateHandle("LockStore", store); err != nil {
		return err
	}
	if v, ok := store.(Validator); ok {
		if err := v.Valid(); err != nil {
			return fmt.Errorf("%w: %T cannot be used: %w", ErrInvalidArgument, store, err)
		}
	}
	return nil
}
