package sqlstore

import (
	"fmt"
	"strconv"
	"strings"
)

// Placeholder is how a database client writes a bound parameter in SQL
// text. A Store renders its statements once, at construction, in the style
// of the client that runs them (see [WithPlaceholder]).
type Placeholder uint8

const (
	// Dollar writes $1, $2, ...; a parameter used twice keeps its number
	// (PostgreSQL's own style: pgx, lib/pq).
	Dollar Placeholder = iota + 1
	// Question writes ? for every use of a parameter, and binds the value
	// again each time (MySQL drivers, GORM and bun on every database).
	Question
	// NumberedQuestion writes ?1, ?2, ...; a parameter used twice keeps its
	// number (SQLite).
	NumberedQuestion
)

// String returns the placeholder style's name.
func (p Placeholder) String() string {
	switch p {
	case Dollar:
		return "Dollar"
	case Question:
		return "Question"
	case NumberedQuestion:
		return "NumberedQuestion"
	}
	return fmt.Sprintf("Placeholder(%d)", uint8(p))
}

// param names a value bound to a placeholder. Statements are written once
// per dialect with {key}, {owner}, {ttl}, {token}, {prefix}, {batch} and
// {mark}
// where a value goes; render turns them into the client's placeholders.
type param uint8

const (
	pKey    param = iota
	pOwner        // the caller's owner
	pTTL          // ttl in whole milliseconds, int64
	pToken        // MySQL: the token to write, or the floor to draw from
	pPrefix       // List's key prefix
	pBatch        // RenewBatch's leases, as one JSON text (see batchJSON)
	pMark         // MySQL: the mark of one RenewBatch call's renewals
)

var paramNames = map[string]param{
	"key":    pKey,
	"owner":  pOwner,
	"ttl":    pTTL,
	"token":  pToken,
	"prefix": pPrefix,
	"batch":  pBatch,
	"mark":   pMark,
}

// stmt is a statement rendered for one placeholder style: its SQL text and
// the params of its placeholders, in order.
type stmt struct {
	sql    string
	params []param
}

// render turns template, with {name} where a value goes, into a statement
// in style p. A template with an unknown name is a bug in this package, so
// it panics (at package tests, never at a user's call: templates are
// constants).
func render(template string, p Placeholder) stmt {
	var (
		b      strings.Builder
		params []param
		number = map[param]int{}
	)
	rest := template
	for {
		i := strings.IndexByte(rest, '{')
		if i < 0 {
			b.WriteString(rest)
			break
		}
		j := strings.IndexByte(rest[i:], '}')
		if j < 0 {
			panic("sqlstore: unclosed { in statement: " + template)
		}
		name := rest[i+1 : i+j]
		pm, ok := paramNames[name]
		if !ok {
			panic("sqlstore: unknown parameter {" + name + "} in statement: " + template)
		}
		b.WriteString(rest[:i])
		rest = rest[i+j+1:]
		if p == Question {
			b.WriteByte('?')
			params = append(params, pm)
			continue
		}
		n, seen := number[pm]
		if !seen {
			params = append(params, pm)
			n = len(params)
			number[pm] = n
		}
		if p == Dollar {
			b.WriteByte('$')
		} else {
			b.WriteByte('?')
		}
		b.WriteString(strconv.Itoa(n))
	}
	return stmt{sql: b.String(), params: params}
}

// values are an operation's arguments.
type values struct {
	key, owner string
	ttlMillis  int64
	ttl        any // ttlMillis as an interface, if at hand (see Store.ttlArg)
	token      int64
	prefix     string
	batch      string
	mark       int64
}

// args returns the values of st's placeholders, in order. They are a new
// slice each time: a client's hooks (bun's, GORM's, pgx's tracers) see it
// and may keep it.
func (st stmt) args(v values) []any {
	args := make([]any, len(st.params))
	for i, p := range st.params {
		switch p {
		case pKey:
			args[i] = v.key
		case pOwner:
			args[i] = v.owner
		case pTTL:
			if v.ttl != nil {
				args[i] = v.ttl
			} else {
				args[i] = v.ttlMillis
			}
		case pToken:
			args[i] = v.token
		case pPrefix:
			args[i] = v.prefix
		case pBatch:
			args[i] = v.batch
		case pMark:
			args[i] = v.mark
		}
	}
	return args
}
