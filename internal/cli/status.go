package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/leasehold/leasehold/core"
)

func (e Env) status(args []string) int {
	fs := newFlagSet("status")
	storeFlag := fs.String("store", "", "")
	prefix := fs.String("prefix", "", "")
	format := fs.String("format", "table", "")
	if code, done := e.parse(fs, args); done {
		return code
	}
	if fs.NArg() > 0 {
		return e.usageErr(fmt.Errorf("status takes no arguments, got %q", fs.Arg(0)))
	}
	if *format != "table" && *format != "json" {
		return e.usageErr(fmt.Errorf("status --format %q: want table or json", *format))
	}
	ctx, stop := interruptible()
	defer stop()
	raw, err := storeURL(*storeFlag)
	if err != nil {
		return e.fail(err, ExitError)
	}
	st, err := openStore(ctx, raw)
	if err != nil {
		return e.fail(err, ExitError)
	}
	defer st.Close()
	if st.lister == nil {
		return e.fail(fmt.Errorf("store %s cannot list its locks", st.desc), ExitError)
	}
	lctx, cancel := context.WithTimeout(ctx, openTimeout)
	defer cancel()
	locks, err := st.lister.List(lctx, *prefix)
	if err != nil {
		return e.fail(fmt.Errorf("store %s: %w", st.desc, err), ExitError)
	}
	if *format == "json" {
		return e.statusJSON(locks)
	}
	if len(locks) == 0 {
		if *prefix != "" {
			fmt.Fprintf(e.Stdout, "no live locks with prefix %q in %s\n", *prefix, st.desc)
		} else {
			fmt.Fprintf(e.Stdout, "no live locks in %s\n", st.desc)
		}
		return ExitOK
	}
	tw := tabwriter.NewWriter(e.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KEY\tHOLDER\tTOKEN\tEXPIRES IN")
	for _, l := range locks {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\n", quoteIfNeeded(l.Key), quoteIfNeeded(holder(l.Owner)), l.Token, expiresIn(l.ExpiresIn))
	}
	if err := tw.Flush(); err != nil {
		return e.fail(err, ExitError)
	}
	return ExitOK
}

// lockJSON is one live lock in status --format json.
type lockJSON struct {
	Key         string `json:"key"`
	Holder      string `json:"holder"` // the instance name part of owner
	Owner       string `json:"owner"`
	Token       int64  `json:"token"`
	ExpiresInMS int64  `json:"expires_in_ms"`
}

// statusJSON prints locks as a JSON array, [] when there are none, so that
// a script reads one shape whatever the store holds.
func (e Env) statusJSON(locks []core.LockInfo) int {
	out := make([]lockJSON, 0, len(locks))
	for _, l := range locks {
		out = append(out, lockJSON{Key: l.Key, Holder: holder(l.Owner), Owner: l.Owner, Token: l.Token, ExpiresInMS: l.ExpiresIn.Milliseconds()})
	}
	enc := json.NewEncoder(e.Stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		return e.fail(err, ExitError)
	}
	return ExitOK
}

// holder returns the readable part of an owner id. leasehold's owner ids
// are "<instance name>/<random part>"; the random part tells an operator
// nothing.
func holder(owner string) string {
	if i := strings.LastIndexByte(owner, '/'); i > 0 {
		return owner[:i]
	}
	return owner
}

// expiresIn formats the time left, to the tenth of a second under a minute.
func expiresIn(d time.Duration) string {
	if d < time.Minute {
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}

// quoteIfNeeded keeps a table readable when a key holds spaces, tabs or
// unprintable characters.
func quoteIfNeeded(s string) string {
	if s == "" || strings.ContainsAny(s, " \t\n\r\"") || strconv.Quote(s) != `"`+s+`"` {
		return strconv.Quote(s)
	}
	return s
}
