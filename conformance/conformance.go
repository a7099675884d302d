package conformance

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/leasehold/leasehold/core"
)

// Defaults used when an [Options] field is left zero.
const (
	// DefaultCallers is the default of [Options.Callers].
	DefaultCallers = 16
	// DefaultTTL is the default of [Options.TTL].
	DefaultTTL = 2500 * time.Millisecond
	// DefaultTimeout is the default of [Options.Timeout].
	DefaultTimeout = 10 * time.Second
	// DefaultPrefix is the default of [Options.KeyPrefix].
	DefaultPrefix = "conformance"
)

// Options tunes the kit to the store under test. The zero value is valid:
// every field has a default, and a store that cannot move its clock or reset
// its token source runs everything except the token-floor case.
type Options struct {
	// Callers is how many goroutines each race case releases at once, all
	// against one key or four to a key, each calling through a store of its
	// own from newStore.
	// Default [DefaultCallers] (16); at least 2. The stores of a case must
	// let that many calls overlap on the server: stores that share one
	// connection pool need a pool at least this large.
	Callers int

	// TTL is the lock ttl of the cases that test expiry. Those cases check
	// that a lock is still held at TTL/2 and free at TTL + TTL/6 (and
	// renew-then-expire, which renews at TTL/2, that it is held at
	// TTL + TTL/6 and free at TTL/2 + TTL + TTL/6), so without AdvanceTime a
	// store call must return well within TTL/3. It is also the ttl of the
	// jobs and elections of the "instances" group, whose instances renew
	// every TTL/3. Default [DefaultTTL] (2.5s); a whole number of
	// milliseconds, at least 6ms. A store that declares coarse expiry
	// (core.ExpiryPrecisioner) has its locks checked free that much later;
	// the checks that a lock is held do not move. Cases that do not test expiry hold their
	// locks for a minute instead, so a slow store never sees them expire by
	// accident.
	TTL time.Duration

	// AdvanceTime, if set, moves the store's clock forward by d; the kit then
	// never sleeps. Use it with a store whose clock the test controls (a
	// [core.MemoryStore] on a [core.ManualClock]: pass clock.Advance). When
	// it is set, the cases run one after another, since moving a shared clock
	// would disturb a case running beside it. The instance cases move the
	// manual clocks of their live instances by the same steps.
	//
	// If nil, the expiry cases wait in real time for the store's own clock
	// to pass the ttl, and run concurrently with each other under [Run]; the
	// instance cases move their live instances' clocks with real time.
	AdvanceTime func(d time.Duration)

	// ResetTokens, if set, sends the store's token source back (as a restore
	// from an old backup or a failover to a lagging replica would) and
	// returns once the store draws tokens from the reset source. The
	// token-floor case calls it to prove that keys keep their per-key floor.
	// If nil, the kit uses the store's own ResetTokens method when it has
	// one (see [TokenResetter]); without either, that case is skipped and
	// says why. Other runs of the kit that
	// share the store may be running at the time; a correct store keeps
	// their tokens growing too.
	ResetTokens func(ctx context.Context) error

	// Timeout bounds each store call the kit makes, and each ResetTokens
	// call, through the call's context. A call that fails or times out fails
	// the case, except in the cancelled-context case, where an error is the
	// required answer. Default [DefaultTimeout] (10s).
	Timeout time.Duration

	// KeyPrefix starts every key the kit uses: keys are
	// "<KeyPrefix>:<case name>:<random>", so runs from several machines can
	// share one server, and a server's access rules can confine the kit to
	// the prefix. Default [DefaultPrefix] ("conformance"); at most 100
	// characters, and itself a valid key (see [core.ValidateKey]).
	KeyPrefix string

	// DB, if set, is the database/sql pool the stores under test share.
	// The kit then watches it during the race cases and says so when the
	// pool closed idle connections round after round (a pool whose
	// SetMaxIdleConns is below the calls the kit makes at once reconnects
	// on every round, which can make the kit ten times slower); see
	// docs/conformance.md, "Pool sizing". Optional: the kit never uses it
	// to call the store.
	DB *sql.DB

	// FailGroup, if set, makes the store's RenewBatch fail the group of
	// leases that key's lease belongs to (the node of a cluster that
	// serves key, its shard, its statement), as a node that stopped
	// answering would, in every call until restore is called; the store's
	// other calls may fail too meanwhile. It is for stores that send a
	// batch in groups that fail on their own and answer partially with a
	// [*core.BatchError]: the batch-partial-answer case calls it to check
	// that one failed group costs only its own leases. Without it, that
	// case is skipped and says why.
	FailGroup func(key string) (restore func())
}

// TokenResetter is implemented by stores that can send their token source
// back, for tests: every store of the leasehold repository has it. The kit
// uses it when [Options.ResetTokens] is nil.
type TokenResetter interface {
	ResetTokens(ctx context.Context) error
}

// withDefaults fills zero fields and checks the result.
func (o Options) withDefaults() (Options, error) {
	if o.Callers == 0 {
		o.Callers = DefaultCallers
	}
	if o.TTL == 0 {
		o.TTL = DefaultTTL
	}
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
	if o.KeyPrefix == "" {
		o.KeyPrefix = DefaultPrefix
	}
	switch {
	case o.Callers < 2:
		return o, fmt.Errorf("conformance: Options.Callers is %d; a race needs at least 2 callers", o.Callers)
	case core.ValidateTTL(o.TTL) != nil:
		return o, fmt.Errorf("conformance: Options.TTL: %w", core.ValidateTTL(o.TTL))
	case o.TTL < 6*time.Millisecond:
		return o, fmt.Errorf("conformance: Options.TTL is %v; the expiry cases need at least 6ms to tell their two checks apart (see Options.TTL)", o.TTL)
	case o.Timeout < 0:
		return o, fmt.Errorf("conformance: Options.Timeout is %v; want a positive duration, or 0 for the default", o.Timeout)
	case core.ValidateKey(o.KeyPrefix) != nil:
		return o, fmt.Errorf("conformance: Options.KeyPrefix: %w", core.ValidateKey(o.KeyPrefix))
	case len([]rune(o.KeyPrefix)) > maxPrefix:
		return o, fmt.Errorf("conformance: Options.KeyPrefix has %d characters; at most %d leave room for the kit's own key parts", len([]rune(o.KeyPrefix)), maxPrefix)
	}
	return o, nil
}

const maxPrefix = 100

// Case is one check of the kit.
type Case struct {
	// Name identifies the case: the subtest name under [Run] and the spec
	// text under [Declare] (Ginkgo's It), so `go test -run
	// 'Conformance/race-'` or `ginkgo --focus race-` picks cases out. It also appears in every key
	// the case uses.
	Name string
	// Group is the family the case belongs to. "store" cases call a
	// [core.LockStore] directly and check the rules documented on it.
	// "instances" cases run several [core.Locks] instances on the one store,
	// each on a [core.ManualClock] of its own so that the case can pause
	// some, and check what a service relies on: one runner per job tick,
	// one leader, hand-overs on shutdown and after a pause, fencing.
	Group string
	// Catches says in one sentence which bug in a store makes the case fail.
	Catches string
	// Fix says in one sentence how a store usually fixes that bug. Every
	// failure the case reports ends with it, after "Usual fix: ".
	Fix string
	// Concurrent marks the race cases, which release many callers at once.
	// They prove something only about a store whose calls really overlap,
	// such as a server reached through a connection pool; a store that
	// serialises every call passes them trivially.
	Concurrent bool
	// Waits marks the cases that let time pass. Without
	// [Options.AdvanceTime] they sleep in real time (concurrently with each
	// other under [Run]): a "store" case until its last check (see
	// [Options.TTL]; about 1.7 × TTL for renew-then-expire, which checks
	// after a renewal), an "instances" case for about 1.5 × TTL
	// (jobs-handover-on-close for at least a second, and a failing case for
	// up to about 2 × TTL).
	Waits bool

	// alone marks cases that must not run beside the waiting cases (see
	// steeredCases): Declare runs them once those have ended.
	alone bool

	// lateFrees marks a race case that judges itself how late the store
	// frees expired locks: its history takes an Acquire refused after a
	// lock's expiry as legal (see history.lateFrees).
	lateFrees bool

	run func(t testing.TB, e *env)
}

// groups lists the case groups in the order they run. Each group lives in
// its own files (store_*.go for the "store" group, instance_*.go for the
// "instances" group); a new group adds its function here.
var groups = []func() []Case{
	storeCases,
	listerCases,
	batchCases,
	batchPartialCases,
	notifyCases,
	instanceCases,
}

// Cases returns every case of the kit, in the order [Run] and [Declare] run
// them. The slice is new on each call.
func Cases() []Case {
	var all []Case
	for _, g := range groups {
		all = append(all, g()...)
	}
	return all
}

// Run runs every case of the kit against the stores newStore returns, each
// as a subtest of t named after the case. A driver's test file needs one
// test that calls it:
//
//	func TestConformance(t *testing.T) {
//		conformance.Run(t, func(t testing.TB) core.LockStore { return newTestStore(t) }, conformance.Options{})
//	}
//
// newStore is called on the case's goroutine, with the case's testing.TB,
// so it can register cleanups or fail the case when the store cannot be
// reached: once when the case starts, then again for each racing caller of
// the race cases (up to [Options.Callers]) and for each core.Locks
// instance of the instance cases, which call through stores of their own,
// as the instances of a service each call through a client of their own.
// So that a driver's client-side state (a cache, a counter, a
// connection's session) is exercised as in production, newStore should
// return a new store value on a new client each time where it can, over
// data shared by the whole case: the same database, server or file,
// created once (each case uses random keys of its own, so every case may
// share it too). Where a client is a connection pool and the server limits
// connections (PostgreSQL's default max_connections is 100, MySQL's 151),
// return a new store value over one pool of at least Options.Callers
// connections instead: the kit may hold about a hundred stores at once.
// Returning the same store every time also works, but leaves client-side
// state untested.
//
// Each case is judged under the kit's lateness rule: a failure while the
// test process itself ran late by more than TTL/6 is rerun once, and then
// reported as inconclusive, with the measured lateness and no usual fix
// (skipped under -short); see docs/conformance.md, "Inconclusive verdicts".
//
// Without opts.AdvanceTime, the cases that let time pass run concurrently
// with each other, after the others, so the whole kit takes about
// 1.7 × TTL (the longest of them, see [Case.Waits], and at least a second)
// beyond the time of its calls. With AdvanceTime, every case runs
// in turn and none sleeps.
func Run(t *testing.T, newStore func(t testing.TB) core.LockStore, opts Options) {
	t.Helper()
	o, err := opts.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if newStore == nil {
		t.Fatal("conformance: newStore is nil")
	}
	// Without AdvanceTime, the waiting cases run together after the others,
	// each in a goroutine of its own. They mostly sleep, so they do not wait
	// for a slot under go test's -parallel limit (GOMAXPROCS by default), as
	// t.Parallel would; testing allows concurrent t.Run calls.
	var waiting []Case
	for _, c := range Cases() {
		if c.Waits && o.AdvanceTime == nil {
			waiting = append(waiting, c)
			continue
		}
		t.Run(c.Name, func(t *testing.T) { judge(t, c, newStore, o).report(t) })
	}
	var wg sync.WaitGroup
	for _, c := range waiting {
		wg.Go(func() {
			t.Run(c.Name, func(t *testing.T) { judge(t, c, newStore, o).report(t) })
		})
	}
	wg.Wait()
}

// Declare declares one spec per case of the kit through spec, for a test
// framework that builds a tree of specs first and runs them later, as
// Ginkgo does. spec is called at once, once per case in the order of
// [Cases], with the case's name and the body to run; the framework calls
// body later, with the testing.TB of that spec. Package
// github.com/leasehold/leasehold/conformance/ginkgokit is Declare for
// Ginkgo (its Specs passes ginkgo.It and GinkgoTB), in a module of its own
// so that a user of [Run] has no Ginkgo in their go.sum.
//
// newStore is called as under [Run]. Without opts.AdvanceTime, the cases
// marked [Case.Waits] sleep in real time, so, as under Run, they run
// concurrently: the first of their bodies starts all of them, in
// goroutines, and each of their bodies reports its own case's outcome when
// it ends. Their newStore receives a testing.TB that records failures and
// cleanups for the case (its other methods are those of the spec that
// started them). The cases that must not run beside the waiting ones wait
// for those to end first. The whole kit then takes about 1.7 × TTL beyond
// the time of its calls, as under Run.
func Declare(spec func(name string, body func(t testing.TB)), newStore func(t testing.TB) core.LockStore, opts Options) {
	var (
		start   sync.Once
		waiting = map[string]*judged{}
	)
	startWaiting := func(t testing.TB) {
		for _, c := range Cases() {
			if c.Waits {
				j := &judged{done: make(chan struct{})}
				waiting[c.Name] = j
				go func() {
					defer close(j.done)
					j.out = judge(t, c, newStore, opts)
				}()
			}
		}
	}
	for _, c := range Cases() {
		if c.Waits && opts.AdvanceTime == nil {
			spec(c.Name, func(t testing.TB) {
				start.Do(func() { startWaiting(t) })
				j := waiting[c.Name]
				<-j.done
				j.out.report(t)
			})
			continue
		}
		spec(c.Name, func(t testing.TB) {
			if c.alone {
				for _, j := range waiting {
					<-j.done
				}
			}
			judge(t, c, newStore, opts).report(t)
		})
	}
}

// judged is the verdict of a case running in a goroutine of its own.
type judged struct {
	done chan struct{}
	out  outcome
}

// Run runs the case alone against the stores newStore returns, under the
// kit's lateness rule (see [Run]), and reports its verdict to t: a failure
// fails t, an inconclusive verdict fails it too (or skips it under -short),
// and a skip skips it. A failure ends t's goroutine, as t.Fatal does. It
// lets a test run one case, or hand the kit a testing.TB of its own that
// records the verdict instead of failing, as the kit's tests do with
// deliberately broken stores.
func (c Case) Run(t testing.TB, newStore func(t testing.TB) core.LockStore, opts Options) {
	t.Helper()
	judge(t, c, newStore, opts).report(t)
}

// Verdict is what a case concluded about a store, as [Case.Judge] returns
// it instead of reporting it.
type Verdict struct {
	// Failed and Skipped say how the case ended; neither means it passed.
	// An inconclusive verdict (see [Run]) is a failure whose first
	// message starts with "inconclusive: ".
	Failed, Skipped bool
	// Messages are the case's failure or skip messages, in order.
	Messages []string
}

// Judge runs the case as [Case.Run] does, under the kit's lateness rule,
// and returns its verdict instead of reporting it to t. It is for tests
// that prove the kit against deliberately broken stores: a copy of a
// driver with one flaw must get Failed from the cases the flaw breaks.
func (c Case) Judge(t testing.TB, newStore func(t testing.TB) core.LockStore, opts Options) Verdict {
	t.Helper()
	o := judge(t, c, newStore, opts)
	return Verdict{Failed: o.failed, Skipped: o.skipped, Messages: o.messages}
}

// Message is the verdict's first message, or "" if it has none.
func (v Verdict) Message() string {
	if len(v.Messages) == 0 {
		return ""
	}
	return v.Messages[0]
}

// runCase runs one case against a store from newStore. It validates opts
// itself (again, under Run) so that every entry point, including the kit's
// own tests, reports bad options the same way.
func runCase(t testing.TB, c Case, newStore func(t testing.TB) core.LockStore, opts Options) {
	t.Helper()
	o, err := opts.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if newStore == nil {
		t.Fatal("conformance: newStore is nil")
	}
	ct := &caseTB{TB: t, fix: c.Fix}
	e := newEnv(o, c.Name)
	e.overslept = func(d time.Duration) { noteCall(ct, d) }
	wrap := func(s core.LockStore) core.LockStore { return s }
	var h *history
	if c.Concurrent {
		// Race cases are judged on their whole history too, once they
		// have passed their own checks: the calls through every store of
		// the case.
		h = &history{clocks: e.clocks, lateFrees: c.lateFrees}
		wrap = h.wrap
		defer func() {
			if !t.Failed() {
				h.check(ct)
			}
		}()
		if o.DB != nil {
			defer watchPool(t, o.DB, o.Callers)()
		}
	}
	open := func() core.LockStore {
		s := newStore(t)
		if s == nil {
			t.Fatal("conformance: newStore returned a nil store")
		}
		return s
	}
	store := open()
	e.late = func(ttl time.Duration) time.Duration { return core.ExpiryLateness(store, ttl) }
	if h != nil {
		h.late = e.late
	}
	if r, ok := store.(TokenResetter); ok && o.ResetTokens == nil {
		o.ResetTokens = r.ResetTokens
		e.opts = o
	}
	e.store = wrap(store)
	e.open = func() core.LockStore { return wrap(open()) }
	c.run(ct, e)
}

// caseNamed returns the case called name, for the kit's own tests.
func caseNamed(name string) (Case, bool) {
	cases := Cases()
	i := slices.IndexFunc(cases, func(c Case) bool { return c.Name == name })
	if i < 0 {
		return Case{}, false
	}
	return cases[i], true
}
