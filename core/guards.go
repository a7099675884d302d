package core

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
)

// guardRegistry holds the job guards and elections of an instance: it
// refuses colliding keys, counts running job runs, and shuts them all down,
// in order, before Close releases the other locks.
type guardRegistry struct {
	mu        sync.Mutex
	keys      map[string]string // lock key → who uses it, for collision messages
	jobs      []*Job
	elections []*Election
	closing   bool
	runs      sync.WaitGroup
	// running holds the cancel functions of the runs in progress, which
	// shutdown calls when it stops waiting for them.
	running map[*context.CancelCauseFunc]struct{}
}

func (g *guardRegistry) init() {
	g.keys = make(map[string]string)
	g.running = make(map[*context.CancelCauseFunc]struct{})
}

// register reserves the lock keys of a job or election, named by what.
func (g *guardRegistry) register(what string, keys map[string]string, add func()) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closing {
		return ErrClosed
	}
	for k, role := range keys {
		if other, taken := g.keys[k]; taken {
			return fmt.Errorf("%w: %s uses lock key %q as %s, which %s already uses", ErrDuplicateKey, what, k, role, other)
		}
	}
	for k, role := range keys {
		g.keys[k] = fmt.Sprintf("%s (as %s)", what, role)
	}
	add()
	return nil
}

// unregisterElection frees the key of a stopped election, so that the same
// instance may campaign for it again.
func (g *guardRegistry) unregisterElection(e *Election) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.keys, e.key)
	g.elections = slices.DeleteFunc(g.elections, func(x *Election) bool { return x == e })
}

// startRun counts a job run in, unless the instance is shutting down, and
// returns the function that counts it out. cancel ends the run's context if
// shutdown stops waiting for it.
func (g *guardRegistry) startRun(cancel context.CancelCauseFunc) (done func(), ok bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closing {
		return nil, false
	}
	g.runs.Add(1)
	key := &cancel
	g.running[key] = struct{}{}
	return func() {
		g.mu.Lock()
		delete(g.running, key)
		g.mu.Unlock()
		g.runs.Done()
	}, true
}

// shutdown stops new ticks, waits for running runs (cancelling them when ctx
// ends first), hands job leases back and steps down from elections.
func (g *guardRegistry) shutdown(ctx context.Context) error {
	g.mu.Lock()
	g.closing = true
	jobs, elections := g.jobs, slices.Clone(g.elections) // Stop unregisters from g.elections
	g.mu.Unlock()

	done := make(chan struct{})
	go func() { g.runs.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		// Cancel the runs now, synchronously, so that they see this cause
		// before their locks are released below.
		cause := fmt.Errorf("%w: shutdown stopped waiting for the run: %w", ErrClosed, context.Cause(ctx))
		g.mu.Lock()
		for cancel := range g.running {
			(*cancel)(cause)
		}
		g.mu.Unlock()
	}

	var errs []error
	for _, j := range jobs {
		errs = append(errs, j.handBack(ctx))
	}
	for _, e := range elections {
		errs = append(errs, e.Stop(ctx))
	}
	return errors.Join(errs...)
}
