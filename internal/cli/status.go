package cli

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

func (e Env) status(args []string) int {
	fs := newFlagSet("status")
	storeFlag := fs.String("store", "", "")
	prefix := fs.String("prefix", "", "")
	if code, done := e.parse(fs, args); done {
		return code
	}
	if fs.NArg() > 0 {
		return e.usageErr(fmt.Errorf("status takes no arguments, got %q", fs.Arg(0)))
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
