// Package connhint names the likely cause of a store's connection error:
// TLS against a server without it, refused credentials, nothing listening,
// no answer while connecting. leasehold's core adds the hint to the errors
// and log lines of store calls, the leasehold command to its store errors;
// a driver may add it to the errors of its constructor.
//
// A hint is a guess from the error's type and text, for a person reading a
// log: code should not branch on it.
package connhint

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/url"
	"strings"
	"syscall"
)

// Error is an error with the likely cause of it. It unwraps to Err, so
// errors.Is and errors.As see through it.
type Error struct {
	Err  error
	Hint string
}

// Error reads "<err> (hint: <hint>)".
func (e *Error) Error() string { return e.Err.Error() + " (hint: " + e.Hint + ")" }

// Unwrap returns Err.
func (e *Error) Unwrap() error { return e.Err }

// Wrap returns err as an [*Error] when [Hint] names a likely cause, and err
// itself otherwise (nil stays nil, and an error that has a hint already is
// not wrapped again).
func Wrap(err error) error {
	return wrap(err, Hint(err))
}

// WrapConnect is [Wrap] for an error of a connection attempt, with
// [HintConnect]'s hints.
func WrapConnect(err error, wantsTLS bool) error {
	return wrap(err, HintConnect(err, wantsTLS))
}

func wrap(err error, hint string) error {
	if hint == "" || errors.As(err, new(*Error)) {
		return err
	}
	return &Error{Err: err, Hint: hint}
}

// Hint returns the likely cause of err, an error of any store call, or ""
// when err shows none. A timeout is hinted only when err says it happened
// while connecting: a call that outlived its context on a live connection
// is not a connection problem.
func Hint(err error) string {
	if err == nil {
		return ""
	}
	if h := plainCause(err); h != "" {
		return h
	}
	if timedOut(err) && connecting(err) {
		return noAnswer
	}
	return ""
}

// HintConnect returns the likely cause of err, an error of an attempt to
// connect (a constructor's first call, a ping), or "". wantsTLS says whether
// the client was asked for TLS: a server without it waits for a command and
// never answers the handshake.
func HintConnect(err error, wantsTLS bool) string {
	if err == nil {
		return ""
	}
	if h := plainCause(err); h != "" {
		return h
	}
	switch {
	case timedOut(err) && wantsTLS:
		return noTLSAnswer
	case timedOut(err):
		return noAnswer
	}
	return ""
}

const (
	tlsMismatch = "the server answered a TLS handshake without TLS: it does not use TLS; use the URL's plain form (redis://, valkey://, sslmode=disable, no tls=)"
	authRefused = "the server refused the user or password: check the credentials in the URL (user:password@host)"
	refused     = "nothing listens at that address: is the server running, and are the host and port right?"
	noTLSAnswer = "no answer to the TLS handshake within the dial timeout: a server without TLS waits for a command and never answers one; if it has no TLS, use the URL's plain form (redis://, valkey://, sslmode=disable)"
	noAnswer    = "no answer within the dial timeout: the port may belong to another service that accepts connections and never answers, the server may be stopped or overloaded, or a firewall drops the packets"
)

// authFailures are what servers say when they refuse credentials: Redis
// and Valkey, PostgreSQL (SQLSTATE 28P01, 28000), MySQL and MariaDB (1045).
var authFailures = []string{"WRONGPASS", "NOAUTH", "SQLSTATE 28P01", "SQLSTATE 28000", "Error 1045", "password authentication failed"}

// plainCause returns the causes an error shows whatever the call was.
func plainCause(err error) string {
	var record tls.RecordHeaderError
	msg := err.Error()
	switch {
	case errors.As(err, &record) || strings.Contains(msg, "first record does not look like a TLS handshake"):
		return tlsMismatch
	case containsAny(msg, authFailures):
		return authRefused
	case errors.Is(err, syscall.ECONNREFUSED):
		return refused
	}
	return ""
}

func timedOut(err error) bool {
	var netErr net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.As(err, &netErr) && netErr.Timeout()
}

// connecting reports whether err says it came from opening a connection:
// a dial, a TLS handshake, or a driver's connect (pgx: "failed to connect").
func connecting(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	return containsAny(err.Error(), []string{"failed to connect", "TLS handshake timeout", "dial tcp"})
}

func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// WantsTLS reports whether a store URL asks for TLS: rediss:// or
// valkeys://, sslmode=require (or verify-ca, verify-full) on PostgreSQL, a
// tls= parameter other than false on MySQL.
func WantsTLS(rawURL string) bool {
	u, err := url.Parse(rawURL)
	if err != nil {
		return false
	}
	q := u.Query()
	switch strings.ToLower(u.Scheme) {
	case "rediss", "valkeys":
		return true
	case "postgres", "postgresql":
		switch q.Get("sslmode") {
		case "require", "verify-ca", "verify-full":
			return true
		}
	case "mysql", "mariadb":
		return q.Has("tls") && q.Get("tls") != "false"
	}
	return false
}
