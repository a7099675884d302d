package conformance_test

import (
	"errors"
	"flag"
	"io/fs"
	"os"
	"strings"
	"testing"

	"github.com/leasehold/leasehold/conformance"
)

var updateDocs = flag.Bool("update-docs", false, "rewrite the list of cases in docs/conformance.md from Cases()")

const (
	docPath    = "../docs/conformance.md"
	casesBegin = "<!-- cases:begin: generated from conformance.Cases() by `go test -run TestDocsListEveryCase -update-docs` in conformance/ -->\n"
	casesEnd   = "<!-- cases:end -->\n"
)

// caseList renders the list of cases as docs/conformance.md shows it.
func caseList() string {
	var b strings.Builder
	group := ""
	for _, c := range conformance.Cases() {
		if c.Group != group {
			group = c.Group
			b.WriteString("\n#### Group `" + group + "`\n\n")
		}
		b.WriteString("- `" + c.Name + "` catches " + c.Catches + " Usual fix: " + c.Fix)
		var notes []string
		if c.Concurrent {
			notes = append(notes, "race: meaningful only on a store whose calls overlap")
		}
		switch {
		case c.Waits && c.Group == "instances":
			notes = append(notes, "waits: runs in real time without AdvanceTime, see Timing")
		case c.Waits:
			notes = append(notes, "waits: sleeps up to "+storeWait(c.Name)+" without AdvanceTime")
		}
		if len(notes) > 0 {
			b.WriteString(" *(" + strings.Join(notes, "; ") + ")*")
		}
		b.WriteString("\n")
	}
	return b.String() + "\n"
}

// storeWait says how long a waiting store case sleeps without AdvanceTime.
func storeWait(name string) string {
	switch name {
	case "renew-then-expire":
		return "TTL/2 + TTL + TTL/6"
	case "batch-mixed-leases":
		return "2 × (TTL/2 + TTL/6)"
	case "race-takeover-expired-key":
		return "TTL + TTL/6, and up to 2 × TTL more for keys the store frees late"
	}
	return "TTL + TTL/6"
}

// TestDocsListEveryCase keeps the list of cases in docs/conformance.md in
// step with Cases(): every name, what it catches, and its notes.
func TestDocsListEveryCase(t *testing.T) {
	raw, err := os.ReadFile(docPath)
	if errors.Is(err, fs.ErrNotExist) {
		if _, err := os.Stat("../core/store.go"); errors.Is(err, fs.ErrNotExist) {
			t.Skip("not in the leasehold repository (docs/ is outside this module)")
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	i, j := strings.Index(doc, casesBegin), strings.Index(doc, casesEnd)
	if i < 0 || j < i {
		t.Fatalf("%s lacks the markers of the generated list of cases:\n%s%s", docPath, casesBegin, casesEnd)
	}
	want := caseList()
	if got := doc[i+len(casesBegin) : j]; got != want {
		if *updateDocs {
			doc = doc[:i+len(casesBegin)] + want + doc[j:]
			if err := os.WriteFile(docPath, []byte(doc), 0o644); err != nil {
				t.Fatal(err)
			}
			t.Logf("rewrote the list of cases in %s", docPath)
			return
		}
		t.Errorf("the list of cases in %s is not the one Cases() gives; run go test -run TestDocsListEveryCase -update-docs in conformance/ to rewrite it. Want:\n%s", docPath, want)
	}
	for _, c := range conformance.Cases() {
		if strings.Count(doc, "`"+c.Name+"`") < 1 {
			t.Errorf("%s does not name case %s", docPath, c.Name)
		}
	}
}
