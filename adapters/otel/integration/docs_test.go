package integration

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	leaseholdotel "github.com/leasehold/leasehold/adapters/otel"
	"github.com/leasehold/leasehold/core"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/otlptranslator"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

const observabilityDoc = "../../../docs/observability.md"

// TestDocShowsTestedCode: every Go block of docs/observability.md is code
// of the adapter or of this module (its examples and tests), so the page
// shows code that compiles and runs. Lines are compared without their
// indentation and comment markers, so a block may come from a doc comment
// or from inside a function.
func TestDocShowsTestedCode(t *testing.T) {
	doc, err := os.ReadFile(observabilityDoc)
	if err != nil {
		t.Fatal(err)
	}
	var sources []string
	for _, dir := range []string{".", ".."} {
		files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			sources = append(sources, bare(string(b)))
		}
	}
	all := strings.Join(sources, "\n")
	blocks := 0
	for rest := string(doc); ; {
		_, after, found := strings.Cut(rest, "```go\n")
		if !found {
			break
		}
		var block string
		block, rest, _ = strings.Cut(after, "```")
		blocks++
		if !strings.Contains(all, bare(block)) {
			t.Errorf("this Go block of %s is not in the adapter's or its tests' code:\n%s", observabilityDoc, block)
		}
	}
	if blocks < 4 {
		t.Fatalf("found %d Go blocks in %s", blocks, observabilityDoc)
	}
}

// bare returns text's lines without indentation or comment markers.
func bare(text string) string {
	var lines []string
	for line := range strings.Lines(text) {
		line = strings.TrimSpace(line)
		line = strings.TrimSpace(strings.TrimPrefix(line, "//"))
		lines = append(lines, line)
	}
	return strings.Trim(strings.Join(lines, "\n"), "\n")
}

// TestPrometheusNames: the Prometheus names in docs/observability.md are
// the ones a scrape shows, all of them, after instances held, renewed and
// lost leases, ran and skipped a job, and led an election.
func TestPrometheusNames(t *testing.T) {
	doc, err := os.ReadFile(observabilityDoc)
	if err != nil {
		t.Fatal(err)
	}
	var documented []string
	for _, m := range regexp.MustCompile("(?m)^\\| `leasehold\\.[a-z.]+` \\| `(leasehold_[a-z_]+)`").FindAllSubmatch(doc, -1) {
		documented = append(documented, string(m[1]))
	}
	if len(documented) != 8 {
		t.Fatalf("the name table lists %d metrics: %q", len(documented), documented)
	}

	registry := prometheus.NewRegistry()
	exporter, err := otelprom.New(otelprom.WithRegisterer(registry),
		otelprom.WithTranslationStrategy(otlptranslator.UnderscoreEscapingWithSuffixes))
	if err != nil {
		t.Fatal(err)
	}
	meters := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter))
	clock := core.NewManualClock(t0)
	store := core.NewMemoryStore(core.WithMemoryClock(clock))
	ctx := context.Background()
	for range 2 {
		l, err := core.New(store, core.WithClock(clock), core.WithLogger(discard),
			leaseholdotel.Instrument(leaseholdotel.WithMeterProvider(meters)))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { clock.Advance(time.Second); _ = l.Close(ctx) })
		job, err := l.Job(func(context.Context) error { return nil }, core.WithJobKey("export"), core.OnOneInstance())
		if err != nil {
			t.Fatal(err)
		}
		_ = job.Run(ctx) // runs on the first, skipped on the second
		if _, err := l.Elect("feed", core.Campaign{OnAcquired: func(*core.Lock) error { return nil }}); err != nil {
			t.Fatal(err)
		}
	}
	clock.Advance(10 * time.Second) // renewals

	rec := httptest.NewRecorder()
	promhttp.HandlerFor(registry, promhttp.HandlerOpts{}).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	var scraped []string
	for _, m := range regexp.MustCompile(`(?m)^# TYPE (leasehold_\w+) `).FindAllStringSubmatch(rec.Body.String(), -1) {
		scraped = append(scraped, m[1])
	}
	slices.Sort(documented)
	slices.Sort(scraped)
	if !slices.Equal(scraped, documented) {
		t.Fatalf("scraped metrics %q, documented %q", scraped, documented)
	}
}
