package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// soakScript is the command of the soak: it appends its start and its end
// to the log, with its fencing token, and holds between them for a time
// of its own (0 to 0.9 s), printing the token on stdout first.
const soakScript = `echo "$LEASEHOLD_FENCING_TOKEN"
echo "start $LEASEHOLD_FENCING_TOKEN" >> "$0"
sleep 0.$(( $$ % 10 ))
echo "end $LEASEHOLD_FENCING_TOKEN" >> "$0"`

// soakDuration is how long each store's soak fires: a few seconds by
// default, LEASEHOLD_SOAK (a Go duration, e.g. 2m) for a real soak.
func soakDuration(t *testing.T) time.Duration {
	if s := os.Getenv("LEASEHOLD_SOAK"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatalf("LEASEHOLD_SOAK=%q: %v", s, err)
		}
		return d
	}
	return 6 * time.Second
}

// TestRunSoak: three hosts fire leasehold run on one key every second, as
// three cron entries would, for soakDuration on each store. Runs never
// overlap in the log (each start is followed by its own end, or by nothing
// when the run's lease was lost and its command stopped, exit 76), and
// tokens grow in the order the runs wrote.
func TestRunSoak(t *testing.T) {
	for name, store := range faultStores(t) {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			if store == "" {
				store = sqliteURL(dir)
			}
			key := fmt.Sprintf("soak-%d-%d", os.Getpid(), time.Now().UnixNano())
			log := filepath.Join(dir, "log")
			var (
				mu      sync.Mutex
				codes   = map[int]int{}
				lostRun = map[int64]bool{} // tokens of runs that exited 76
				wg      sync.WaitGroup
			)
			end := time.Now().Add(soakDuration(t))
			for range 3 {
				wg.Go(func() {
					tick := time.NewTicker(time.Second)
					defer tick.Stop()
					for time.Now().Before(end) {
						r := lh(t, dir, "run", "--store", store, "--key", key, "--ttl", "3s", "--", "sh", "-c", soakScript, log)
						mu.Lock()
						codes[r.code]++
						if r.code == 76 {
							if tok, err := strconv.ParseInt(strings.TrimSpace(r.stdout), 10, 64); err == nil {
								lostRun[tok] = true
							}
						}
						mu.Unlock()
						if r.code != 0 && r.code != 75 && r.code != 76 {
							t.Errorf("run: code %d, stderr:\n%s", r.code, r.stderr)
						}
						<-tick.C
					}
				})
			}
			wg.Wait()
			data, err := os.ReadFile(log)
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSpace(string(data)), "\n")
			var open, last int64
			runs := 0
			for i, line := range lines {
				var token int64
				switch {
				case strings.HasPrefix(line, "start "):
					token, _ = strconv.ParseInt(strings.TrimPrefix(line, "start "), 10, 64)
					if open != 0 && !lostRun[open] {
						t.Fatalf("line %d: run %d started while run %d had not ended (runs overlapped):\n%s", i+1, token, open, data)
					}
					if token <= last {
						t.Fatalf("line %d: token %d after %d: tokens must grow:\n%s", i+1, token, last, data)
					}
					open, last = token, token
					runs++
				case strings.HasPrefix(line, "end "):
					token, _ = strconv.ParseInt(strings.TrimPrefix(line, "end "), 10, 64)
					if token != open {
						t.Fatalf("line %d: the end of run %d while run %d held the key (runs overlapped):\n%s", i+1, token, open, data)
					}
					open = 0
				default:
					t.Fatalf("line %d = %q: not a start or an end", i+1, line)
				}
			}
			if runs < 2 {
				t.Fatalf("only %d runs in the soak; exit codes %v", runs, codes)
			}
			t.Logf("%d runs on %s, exit codes %v, last token %d", runs, name, codes, last)
		})
	}
}
