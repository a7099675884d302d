package coretest

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
)

// LogBuffer keeps what is written to it, for a test to read back. Several
// goroutines may write to it at once, as the loggers of a [core.Locks] do
// (renewals log from the lease keeper's goroutines). The zero value is
// an empty buffer.
type LogBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p.
func (b *LogBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns everything written so far.
func (b *LogBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Logger returns a logger that writes text records of every level, debug
// included, to b.
func (b *LogBuffer) Logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(b, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// Lines returns the lines written so far that contain every one of parts,
// each with its newline.
func (b *LogBuffer) Lines(parts ...string) []string {
	var out []string
	for line := range strings.Lines(b.String()) {
		if containsAll(line, parts) {
			out = append(out, line)
		}
	}
	return out
}

// Count returns how many lines written so far contain every one of parts.
func (b *LogBuffer) Count(parts ...string) int { return len(b.Lines(parts...)) }

func containsAll(s string, parts []string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}
