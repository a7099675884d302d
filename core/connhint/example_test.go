package connhint_test

import (
	"errors"
	"fmt"

	"github.com/leasehold/leasehold/core/connhint"
)

// A driver's constructor, or a program's start-up, wraps the error of its
// first connection; the hint names the likely cause.
func ExampleWrapConnect() {
	err := errors.New("WRONGPASS invalid username-password pair or user is disabled.")
	fmt.Println(connhint.WrapConnect(err, false))
	// Output:
	// WRONGPASS invalid username-password pair or user is disabled. (hint: the server refused the user or password: check the credentials in the URL (user:password@host))
}
