package core

import (
	"context"
	"sync"
	"time"

	"github.com/leasehold/leasehold/core/connhint"
)

// keeper keeps every lock a Locks instance holds: it owns the one timer, the
// schedule, the renewal calls to the store (one lease at a time, or in
// batches when the store is a [BatchRenewer]) with their observer calls,
// and the end of each lock. Data flows one way through it:
//
//	Locks.hold → keeper.hold → fire → lease.turn → store → lease.answer → keeper.schedule / keeper.lose
//
// A Lock's lease (lease.go) says what to do; the keeper does it. Releases
// go through keeper.release (release.go).
//
// An instance holding 10,000 locks holds one timer, not 10,000 goroutines.
// When the timer fires, the due renewals run concurrently and the firing
// waits for them: on a ManualClock, Advance returns only once every renewal
// it triggered has reached the store.
//
// With a store that renews in batches, the keeper renews the locks of one
// ttl on a grid of that ttl's renewal interval (ttl/3), counted from the
// instance's start: each lock at the last grid point at or before the time
// its renewal falls due, so early and never late. A lock renewed on a grid
// point falls due on the next one, so once it has been renewed a lock stays
// on the grid, and an instance holding N locks of one ttl renews them in
// ceil(N / MaxBatch) calls a period however they were taken.
type keeper struct {
	l *Locks
	// ctx is the parent of renewals. stop cancels it before it waits for
	// them: once Close has released the locks, a renewal stuck in the store
	// cannot help and must not hold up Close.
	ctx    context.Context
	cancel context.CancelFunc

	// batch is the store as a BatchRenewer, or nil.
	batch BatchRenewer
	// epoch is the origin of the renewal grids: the instance's start.
	epoch time.Time

	// fireFn is k.fire, made once: each use of a method value allocates.
	fireFn func()

	mu    sync.Mutex
	locks indexedHeap[*Lock] // by next
	// timer, once made, is reused when its clock's timers can be reset
	// (see Timer); timerAt is when it is due to fire, zero when it is not.
	timer   Timer
	timerAt time.Time
	stopped bool
	firing  sync.WaitGroup
}

// resetter is a Timer that can be scheduled again.
type resetter interface {
	Reset(d time.Duration) bool
}

func newKeeper(l *Locks) *keeper {
	k := &keeper{l: l, epoch: l.clock.Now()}
	k.locks.less = func(a, b *Lock) bool { return a.next.Before(b.next) }
	k.locks.index = func(lk *Lock) *int { return &lk.heapIndex }
	k.ctx, k.cancel = context.WithCancel(l.base)
	k.batch, _ = l.store.(BatchRenewer)
	k.fireFn = k.fire
	return k
}

// hold starts keeping lk, acquired with a call sent at sent.
func (k *keeper) hold(lk *Lock, sent time.Time) {
	k.schedule(lk, k.slot(sent.Add(lk.ttl/3), lk.ttl))
}

// slot is when to renew a lock of ttl whose renewal falls due at due: due
// itself, or with a batch store the last point of the ttl's grid at or
// before due.
func (k *keeper) slot(due time.Time, ttl time.Duration) time.Time {
	interval := ttl / 3
	if k.batch == nil || interval <= 0 || due.Before(k.epoch) {
		return due
	}
	return due.Add(-due.Sub(k.epoch) % interval)
}

// schedule makes the keeper look at lk at at, instead of when it would have.
func (k *keeper) schedule(lk *Lock, at time.Time) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.stopped {
		return
	}
	lk.next = at
	if lk.heapIndex >= 0 {
		k.locks.fix(lk)
	} else {
		k.locks.push(lk)
	}
	k.arm()
}

// drop stops keeping lk, which has ended, and forgets it in the instance.
func (k *keeper) drop(lk *Lock) {
	k.l.forget(lk)
	k.mu.Lock()
	defer k.mu.Unlock()
	if lk.heapIndex >= 0 {
		k.locks.remove(lk)
		k.arm()
	}
}

// arm points the timer at the earliest lock. Callers hold k.mu.
func (k *keeper) arm() {
	if k.locks.len() == 0 || k.stopped {
		if !k.timerAt.IsZero() {
			k.timer.Stop()
			k.timerAt = time.Time{}
		}
		return
	}
	next := k.locks.first().next
	if k.timerAt.Equal(next) {
		return
	}
	d := next.Sub(k.l.clock.Now())
	if r, ok := k.timer.(resetter); ok {
		// Moves a pending call, or schedules one again. A call already on
		// its way still runs: fire then finds nothing due, and re-arms.
		r.Reset(d)
	} else {
		if !k.timerAt.IsZero() {
			k.timer.Stop()
		}
		k.timer = k.l.clock.AfterFunc(d, k.fireFn)
	}
	k.timerAt = next
}

// renewal is a lock to renew in one firing, with its deadline then.
type renewal struct {
	lk       *Lock
	deadline time.Time
}

// fire takes every lock whose time has come, applies its turn, sends the
// renewals that are due and waits for their answers.
func (k *keeper) fire() {
	now := k.l.clock.Now()
	k.mu.Lock()
	if k.stopped {
		k.mu.Unlock()
		return
	}
	k.firing.Add(1)
	defer k.firing.Done()
	var due []*Lock
	for k.locks.len() > 0 && !k.locks.first().next.After(now) {
		due = append(due, k.locks.pop())
	}
	if !k.timerAt.After(now) {
		k.timerAt = time.Time{} // this is its call; else it was reset since
	}
	k.arm()
	k.mu.Unlock()

	var renewals []renewal
	for _, lk := range due {
		switch step, deadline := lk.lease.turn(now); step {
		case stepLose:
			k.lose(lk, LostDeadline)
		case stepSend:
			renewals = append(renewals, renewal{lk, deadline})
			k.schedule(lk, deadline)
		case stepWait:
			k.schedule(lk, deadline)
		}
	}
	if k.batch != nil {
		k.renewInBatches(now, renewals)
		return
	}
	parallel(len(renewals), maxConcurrentRenewals, func(i int) {
		k.renew(now, renewals[i])
	})
}

// renew sends one renewal, sent at sent, and applies its answer.
func (k *keeper) renew(sent time.Time, r renewal) {
	ctx, cancel := renewalContext(k.ctx, sent, r.deadline)
	ctx, end := k.l.observe(ctx, Op{Type: OpRenew, Key: r.lk.key, Kind: r.lk.kind})
	ok, err := k.l.store.Renew(ctx, r.lk.key, r.lk.owner, r.lk.ttl)
	end(ok, err)
	cancel()
	k.apply(r, sent, ok, err)
}

// renewInBatches sends renewals, sent at sent, through the store's
// RenewBatch in chunks of its MaxBatch, a few chunks at a time, and waits.
func (k *keeper) renewInBatches(sent time.Time, renewals []renewal) {
	size := max(k.batch.MaxBatch(), 1)
	chunks := (len(renewals) + size - 1) / size
	parallel(chunks, maxConcurrentRenewals, func(c int) {
		k.renewChunk(sent, renewals[c*size:min((c+1)*size, len(renewals))])
	})
}

// renewChunk sends one RenewBatch call and applies each lock's answer.
func (k *keeper) renewChunk(sent time.Time, chunk []renewal) {
	leases := make([]Lease, len(chunk))
	latest := chunk[0].deadline
	for i, r := range chunk {
		leases[i] = Lease{Key: r.lk.key, Owner: r.lk.owner, TTL: r.lk.ttl}
		latest = maxTime(latest, r.deadline)
	}
	// The call can help while any of its leases has a deadline ahead; the
	// keeper declares each one lost at its own deadline regardless.
	ctx, cancel := renewalContext(k.ctx, sent, latest)
	// An observer sees each lease as a renewal of its own, all ending
	// with the one call.
	ends := k.observeEach(ctx, chunk)
	renewed, err := k.batch.RenewBatch(ctx, leases)
	cancel()
	// A *BatchError answers some leases and fails others: each lock gets
	// its own answer or its own error, and only the failed ones retry.
	ok, errs := batchAnswers(len(chunk), renewed, err)
	for i, r := range chunk {
		if ends != nil {
			ends[i](ok[i], errs[i])
		}
		k.apply(r, sent, ok[i], errs[i])
	}
}

// observeEach starts an OpRenew per lease of chunk with the instance's
// observer, right before the call, and returns their end functions; nil
// without an observer.
func (k *keeper) observeEach(ctx context.Context, chunk []renewal) []func(bool, error) {
	if k.l.observer == nil {
		return nil
	}
	ends := make([]func(bool, error), len(chunk))
	for i, r := range chunk {
		_, ends[i] = k.l.observe(ctx, Op{Type: OpRenew, Key: r.lk.key, Kind: r.lk.kind})
	}
	return ends
}

// apply applies the answer to r's renewal, sent at sent: the lock's
// transition says what it means, and the keeper acts on it.
func (k *keeper) apply(r renewal, sent time.Time, ok bool, err error) {
	lk := r.lk
	v := lk.lease.answer(lk.ttl, sent, k.l.clock.Now(), ok, err)
	switch {
	case v.lost != 0:
		k.lose(lk, v.lost)
	case !v.retry.IsZero():
		k.l.log.Warn("leasehold: renewal failed; retrying until the deadline", "key", lk.key, "token", lk.token, "deadline", r.deadline, "err", connhint.Wrap(err))
		k.schedule(lk, v.retry)
	case !v.due.IsZero():
		k.schedule(lk, k.slot(v.due, lk.ttl))
	}
}

// lose ends lk, lost for reason, and tells everyone who should know: its
// context first.
func (k *keeper) lose(lk *Lock, reason LossReason) {
	lost, hooks, ok := lk.lease.lose(lk.key, lk.token, reason)
	if !ok {
		return
	}
	lk.unwatch()
	lk.cancel(lost)
	k.drop(lk)
	k.l.reportLost(lost)
	lk.endHold(false, lost)
	runHooks(hooks, lost)
}

// stop cancels the timer and waits for a firing in progress, unless it is
// called from a callback, which may be running inside that firing.
func (k *keeper) stop() {
	k.mu.Lock()
	k.stopped = true
	k.arm()
	k.mu.Unlock()
	k.cancel()
	if k.l.inCallback.Load() == 0 {
		k.firing.Wait()
	}
}

// maxConcurrentRenewals bounds the store calls one firing makes at once, so
// that locks taken together do not renew in a burst of thousands of calls.
const maxConcurrentRenewals = 32

// parallel calls fn(0) … fn(n-1), at most limit at a time, and waits.
func parallel(n, limit int, fn func(i int)) {
	var wg sync.WaitGroup
	sem := make(chan struct{}, limit)
	for i := range n {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			fn(i)
		}()
	}
	wg.Wait()
}

// renewalContext bounds a renewal sent at sent for a lock whose deadline
// is deadline. The call cannot help once the deadline has passed (the
// deadline is enforced by the keeper, not by this timeout, which only
// keeps a hung call from blocking the next renewal for long). The floor
// keeps a retry sent just before the deadline from timing out at once.
func renewalContext(parent context.Context, sent, deadline time.Time) (context.Context, context.CancelFunc) {
	return context.WithTimeout(parent, max(deadline.Sub(sent), time.Second))
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
