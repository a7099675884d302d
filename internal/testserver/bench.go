package testserver

import (
	"sync/atomic"
	"testing"
	"time"
)

// Paired benchmarks one operation done two ways: through a store, and as
// the raw calls an application would write itself. "store" and "raw" each
// run alone and report their allocations and, when calls is not nil, the
// calls they make per operation (calls is reset first; unit names them,
// such as "stmts/op" or "roundtrips/op"). "paired" then runs both in one
// loop, in turn, each first half the time, and reports store-ns/op,
// raw-ns/op and their ratio store/raw: a drift of the server or the machine
// hits both alike, so the ratio holds where separate runs disagree by more.
// Latency is reported only as that ratio's terms, never alone.
func Paired(b *testing.B, store, raw func() error, calls *atomic.Int64, unit string) {
	b.Helper()
	for _, m := range []struct {
		name string
		f    func() error
	}{{"store", store}, {"raw", raw}} {
		b.Run(m.name, func(b *testing.B) {
			b.ReportAllocs()
			if calls != nil {
				calls.Store(0)
			}
			for b.Loop() {
				if err := m.f(); err != nil {
					b.Fatal(err)
				}
			}
			if calls != nil {
				b.ReportMetric(float64(calls.Load())/float64(b.N), unit)
			}
		})
	}
	b.Run("paired", func(b *testing.B) {
		var ts, tr time.Duration
		timed := func(f func() error, d *time.Duration) {
			t0 := time.Now()
			if err := f(); err != nil {
				b.Fatal(err)
			}
			*d += time.Since(t0)
		}
		for i := 0; b.Loop(); i++ {
			if i%2 == 0 {
				timed(store, &ts)
				timed(raw, &tr)
			} else {
				timed(raw, &tr)
				timed(store, &ts)
			}
		}
		b.ReportMetric(float64(ts)/float64(b.N), "store-ns/op")
		b.ReportMetric(float64(tr)/float64(b.N), "raw-ns/op")
		b.ReportMetric(float64(ts)/float64(tr), "store/raw")
	})
}
