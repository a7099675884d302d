package cli

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/url"
	"strings"
	"syscall"
)

// hintedError is a store's connection error with the likely cause, when
// the error shows one.
type hintedError struct {
	err  error
	hint string
}

func (e *hintedError) Error() string { return e.err.Error() + "\n  hint: " + e.hint }
func (e *hintedError) Unwrap() error { return e.err }

// withHint returns err with a hint at its likely cause: TLS against a
// server without it, no answer within the dial timeout, refused
// credentials, nothing listening. wantsTLS says whether the URL asked for
// TLS. An error it does not recognise is returned as it is.
func withHint(err error, wantsTLS bool) error {
	if h := connHint(err, wantsTLS); h != "" {
		return &hintedError{err: err, hint: h}
	}
	return err
}

// authFailures are what servers say when they refuse credentials: Redis
// and Valkey, PostgreSQL (SQLSTATE 28P01, 28000), MySQL and MariaDB (1045).
var authFailures = []string{"WRONGPASS", "NOAUTH", "SQLSTATE 28P01", "SQLSTATE 28000", "Error 1045", "password authentication failed"}

func connHint(err error, wantsTLS bool) string {
	var record tls.RecordHeaderError
	var netErr net.Error
	msg := err.Error()
	switch {
	case errors.As(err, &record) || strings.Contains(msg, "first record does not look like a TLS handshake"):
		return "the server answered a TLS handshake without TLS: it does not use TLS; use the URL's plain form (redis://, valkey://, sslmode=disable, no tls=)"
	case containsAny(msg, authFailures):
		return "the server refused the user or password: check the credentials in the URL (user:password@host)"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "nothing listens at that address: is the server running, and are the host and port right?"
	case wantsTLS && (errors.Is(err, context.DeadlineExceeded) || errors.As(err, &netErr) && netErr.Timeout()):
		return "no answer to the TLS handshake within the dial timeout: a server without TLS waits for a command and never answers one; if it has no TLS, use the URL's plain form (redis://, valkey://, sslmode=disable)"
	case errors.Is(err, context.DeadlineExceeded) || errors.As(err, &netErr) && netErr.Timeout():
		return "no answer within the dial timeout: the port may belong to another service that accepts connections and never answers, the server may be stopped or overloaded, or a firewall drops the packets"
	}
	return ""
}

func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// wantsTLS reports whether a store URL asks for TLS: rediss:// or
// valkeys://, sslmode=require (or verify-ca, verify-full) on PostgreSQL, a
// tls= parameter other than false on MySQL.
func wantsTLS(raw string) bool {
	u, err := url.Parse(raw)
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
