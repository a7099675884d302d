package cronguard_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/leasehold/leasehold/adapters/cronguard"
	"github.com/leasehold/leasehold/core"
	"github.com/leasehold/leasehold/core/coretest"
	"github.com/robfig/cron/v3"
)

// newLocks returns instance name's Locks on store, with a 3s ttl.
func newLocks(t *testing.T, store core.LockStore, name string, opts ...core.Option) *core.Locks {
	return coretest.NewLocks(t, store, append([]core.Option{core.WithInstanceName(name), core.WithDefaultTTL(3 * time.Second)}, opts...)...)
}

// tickLog records, per whole second, which instances completed a tick and
// which ran the job.
type tickLog struct {
	mu    sync.Mutex
	fired map[time.Time][]string
	ran   map[time.Time][]string
	runs  chan string
}

func (l *tickLog) add(m map[time.Time][]string, sec time.Time, name string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	m[sec] = append(m[sec], name)
}

// recorder is a cron.JobWrapper that notes every tick an instance fires.
func (l *tickLog) recorder(name string) cron.JobWrapper {
	return func(j cron.Job) cron.Job {
		return cron.FuncJob(func() {
			sec := time.Now().Truncate(time.Second)
			j.Run()
			l.add(l.fired, sec, name)
		})
	}
}

// TestRealCronRunsEachTickOnOneInstance drives three real robfig/cron
// schedulers, each on its own core.Locks over one shared store, firing the
// same job every second. Each tick must run on exactly one instance, the same
// one every time.
func TestRealCronRunsEachTickOnOneInstance(t *testing.T) {
	store := core.NewMemoryStore()
	ticks := &tickLog{fired: map[time.Time][]string{}, ran: map[time.Time][]string{}, runs: make(chan string, 100)}
	var crons []*cron.Cron
	logs := map[string]*coretest.LogBuffer{}
	for i := range 3 {
		name := fmt.Sprintf("node%d", i)
		logs[name] = &coretest.LogBuffer{}
		locks := newLocks(t, store, name, core.WithLogger(logs[name].Logger()))
		c := cron.New(cron.WithSeconds(), cron.WithChain(ticks.recorder(name)))
		_, _, err := cronguard.AddFunc(c, locks, "@every 1s", "report", func(ctx context.Context) error {
			if core.LockFromContext(ctx) == nil {
				return errors.New("no lock in the run's context")
			}
			ticks.add(ticks.ran, time.Now().Truncate(time.Second), name)
			ticks.runs <- name
			return nil
		}, core.OnOneInstance(), core.WithoutOverlapping())
		if err != nil {
			t.Fatal(err)
		}
		crons = append(crons, c)
	}
	for _, c := range crons {
		c.Start()
	}
	var owner string
	for n := range 3 {
		select {
		case who := <-ticks.runs:
			if owner == "" {
				owner = who
			}
			if who != owner {
				t.Fatalf("run %d on %s, want every run on %s", n, who, owner)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("only %d runs in 5s", n)
		}
	}
	for _, c := range crons {
		<-c.Stop().Done() // waits for the ticks in progress
	}

	ticks.mu.Lock()
	defer ticks.mu.Unlock()
	full := 0
	for sec, ran := range ticks.ran {
		if len(ran) != 1 {
			t.Errorf("second %s: ran on %v, want one instance", sec.Format(time.TimeOnly), ran)
		}
	}
	for sec, fired := range ticks.fired {
		if len(fired) == 3 {
			full++
			if len(ticks.ran[sec]) != 1 {
				t.Errorf("second %s: all three fired, %d ran", sec.Format(time.TimeOnly), len(ticks.ran[sec]))
			}
		}
	}
	if full < 2 {
		t.Errorf("only %d seconds in which all three instances fired", full)
	}
	for name, buf := range logs {
		if name == owner {
			continue
		}
		if buf.Count(`reason="it runs on another instance"`) == 0 {
			t.Errorf("%s logged no skipped tick", name)
		}
	}
}

func TestWrapAndGuard(t *testing.T) {
	locks := newLocks(t, core.NewMemoryStore(), "node0")
	ran := 0
	inner := cron.FuncJob(func() { ran++ })

	job, guarded, err := cronguard.Wrap(locks, "wrapped", inner, core.WithJobKey("ignored"), core.WithoutOverlapping())
	if err != nil {
		t.Fatal(err)
	}
	if guarded.Key() != "wrapped" {
		t.Fatalf("key = %q, want the explicit key to win over WithJobKey", guarded.Key())
	}
	job.Run()
	if err := guarded.Run(context.Background()); err != nil {
		t.Fatalf("run by hand: %v", err)
	}
	if ran != 2 {
		t.Fatalf("inner job ran %d times, want 2", ran)
	}

	for name, call := range map[string]func() error{
		"empty key": func() error { _, _, err := cronguard.Wrap(locks, "", inner, core.OnOneInstance()); return err },
		"no guard":  func() error { _, _, err := cronguard.Wrap(locks, "g", inner); return err },
		"nil job":   func() error { _, _, err := cronguard.Wrap(locks, "n", nil, core.OnOneInstance()); return err },
	} {
		if err := call(); !errors.Is(err, core.ErrInvalidArgument) {
			t.Errorf("%s: %v, want ErrInvalidArgument", name, err)
		}
	}
	if _, _, err := cronguard.Wrap(locks, "wrapped", inner, core.OnOneInstance()); !errors.Is(err, core.ErrDuplicateKey) {
		t.Errorf("duplicate key: %v, want ErrDuplicateKey", err)
	}

	chained := cron.NewChain(cronguard.Guard(locks, "chained", core.OnOneInstance())).Then(inner)
	chained.Run()
	if ran != 3 {
		t.Fatalf("chained job ran %d times in all, want 3", ran)
	}
	func() {
		defer func() {
			r := recover()
			if err, _ := r.(error); !errors.Is(err, core.ErrDuplicateKey) {
				t.Fatalf("Guard on a used key recovered %v, want a panic with ErrDuplicateKey", r)
			}
		}()
		cron.NewChain(cronguard.Guard(locks, "chained", core.OnOneInstance())).Then(inner)
	}()
}

func TestAddFunc(t *testing.T) {
	locks := newLocks(t, core.NewMemoryStore(), "node0")
	c := cron.New(cron.WithSeconds())
	id, job, err := cronguard.AddFunc(c, locks, "@every 1m", "minutely", func(ctx context.Context) error {
		if lk := core.LockFromContext(ctx); lk == nil || lk.Key() != "minutely" {
			return fmt.Errorf("run lock %v", lk)
		}
		return nil
	}, core.WithoutOverlapping())
	if err != nil {
		t.Fatal(err)
	}
	if !c.Entry(id).Valid() {
		t.Fatal("no cron entry")
	}
	if err := job.Run(context.Background()); err != nil {
		t.Fatalf("run by hand: %v", err)
	}
	if _, _, err := cronguard.AddFunc(c, locks, "not a spec", "bad", func(context.Context) error { return nil }, core.OnOneInstance()); err == nil {
		t.Fatal("bad spec accepted")
	}
	if _, _, err := cronguard.AddFunc(c, locks, "@every 1m", "nilfn", nil, core.OnOneInstance()); !errors.Is(err, core.ErrInvalidArgument) {
		t.Fatalf("nil fn: %v", err)
	}
	if _, _, err := cronguard.AddFunc(nil, locks, "@every 1m", "nilcron", func(context.Context) error { return nil }, core.OnOneInstance()); !errors.Is(err, core.ErrInvalidArgument) {
		t.Fatalf("nil cron: %v", err)
	}
}
