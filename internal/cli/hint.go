package cli

import "github.com/leasehold/leasehold/core/connhint"

// hintedError is a store's connection error with the likely cause, when
// the error shows one, on a line of its own.
type hintedError struct {
	err  error
	hint string
}

func (e *hintedError) Error() string { return e.err.Error() + "\n  hint: " + e.hint }
func (e *hintedError) Unwrap() error { return e.err }

// withHint returns err, an error of opening the store at URL raw, with a
// hint at its likely cause (see connhint.HintConnect). An error it does not
// recognise is returned as it is.
func withHint(err error, raw string) error {
	if h := connhint.HintConnect(err, connhint.WantsTLS(raw)); h != "" {
		return &hintedError{err: err, hint: h}
	}
	return err
}
