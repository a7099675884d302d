// Package cronguard runs robfig/cron (github.com/robfig/cron/v3) jobs under
// leasehold's job guards, so that a service running the same cron schedule
// on several instances runs each job on one instance ([core.OnOneInstance])
// and never twice at once ([core.WithoutOverlapping]).
//
// A cron.Job has no name, so every guarded job is given its key explicitly.
// Keep keys stable across releases: during a rolling deploy, old and new
// instances must guard the job under the same key, or both run it.
//
//	c := cron.New(cron.WithSeconds())
//	_, job, err := cronguard.AddFunc(c, locks, "0 */5 * * * *", "billing:invoices",
//		sendInvoices, core.OnOneInstance(), core.WithoutOverlapping())
//
// A guarded tick that does not run (another instance owns the job, or a run
// is still in progress) is logged at debug by the [core.Locks] instance; a
// failed run is logged at error, and a panic in the job is recovered and
// logged at error.
package cronguard

import (
	"context"
	"fmt"

	"github.com/leasehold/leasehold/core"
	"github.com/robfig/cron/v3"
)

// Wrap puts job under the guards given in opts ([core.OnOneInstance],
// [core.WithoutOverlapping] or both, and optionally [core.WithJobTTL]) on locks,
// under key. It returns the cron.Job to schedule and the [*core.Job], whose
// Run runs one tick by hand (from an admin endpoint, say). key overrides any
// [core.WithJobKey] in opts. It fails with an error matching
// [core.ErrInvalidArgument] for an empty key, no guard or a nil job, and
// [core.ErrDuplicateKey] when key is already used on locks.
func Wrap(locks *core.Locks, key string, job cron.Job, opts ...core.JobOption) (cron.Job, *core.Job, error) {
	if job == nil {
		return nil, nil, fmt.Errorf("cronguard: %w: nil cron.Job", core.ErrInvalidArgument)
	}
	return guard(locks, key, func(context.Context) error {
		job.Run()
		return nil
	}, opts)
}

// Guard is [Wrap] as a cron.JobWrapper, for one job:
//
//	c.AddJob("@every 1m", cron.NewChain(cronguard.Guard(locks, "sync", core.OnOneInstance())).Then(job))
//
// Each Guard wraps exactly one job, since it registers its key when it
// wraps: do not pass it to cron.WithChain, which would wrap every job of the
// scheduler under the same key. It panics if the job cannot be registered
// (an empty or duplicate key, no guard), a wiring mistake best found at
// start-up; use [Wrap] or [AddFunc] to get an error instead.
func Guard(locks *core.Locks, key string, opts ...core.JobOption) cron.JobWrapper {
	return func(job cron.Job) cron.Job {
		wrapped, _, err := Wrap(locks, key, job, opts...)
		if err != nil {
			panic(err)
		}
		return wrapped
	}
}

// AddFunc schedules fn on c at spec (in c's schedule syntax) under the guards
// given in opts, with key. fn receives the run's context, which ends when a
// guard's lock is lost or shutdown stops waiting; [core.LockFromContext]
// gives the lock whose fencing token protects fn's writes. It returns the
// cron entry and the [*core.Job]. If spec does not parse, key stays reserved
// on locks: treat the error as fatal at start-up.
func AddFunc(c *cron.Cron, locks *core.Locks, spec, key string, fn func(ctx context.Context) error, opts ...core.JobOption) (cron.EntryID, *core.Job, error) {
	if c == nil {
		return 0, nil, fmt.Errorf("cronguard: %w: nil *cron.Cron", core.ErrInvalidArgument)
	}
	job, guarded, err := guard(locks, key, fn, opts)
	if err != nil {
		return 0, nil, err
	}
	id, err := c.AddJob(spec, job)
	if err != nil {
		return 0, nil, fmt.Errorf("cronguard: job %q: %w", key, err)
	}
	return id, guarded, nil
}

func guard(locks *core.Locks, key string, fn func(context.Context) error, opts []core.JobOption) (cron.Job, *core.Job, error) {
	if locks == nil {
		return nil, nil, fmt.Errorf("cronguard: %w: nil *core.Locks", core.ErrInvalidArgument)
	}
	if key == "" {
		return nil, nil, fmt.Errorf("cronguard: %w: empty key: a guarded cron job needs an explicit, stable key", core.ErrInvalidArgument)
	}
	all := append(append([]core.JobOption(nil), opts...), core.WithJobKey(key))
	j, err := locks.Job(fn, all...)
	if err != nil {
		return nil, nil, fmt.Errorf("cronguard: %w", err)
	}
	return cron.FuncJob(j.Func()), j, nil
}
