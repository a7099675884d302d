package rueidisstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/rueidis"
)

// ErrNotRun is matched by the error of a script that Redis refused
// without running it, and that was still refused when the call's context
// ended: TRYAGAIN (a multi-key command whose slot is being migrated, its
// keys split between the two nodes), CLUSTERDOWN (the cluster cannot
// serve the slot, during a failover), LOADING (the node is loading its
// data), or a MOVED or ASK redirection that was still not served after
// rueidis followed as many as it allows. Nothing was written: an
// acquisition that fails this way took nothing, a renewal renewed
// nothing.
var ErrNotRun = errors.New("rueidisstore: Redis did not run the script")

// refusal is how Redis refused to run a command.
type refusal int

const (
	ran        refusal = iota // not refused: it ran, or the outcome is unknown
	refusedNow                // TRYAGAIN, CLUSTERDOWN, LOADING: try again later
	redirected                // MOVED, ASK: rueidis follows these itself
)

// refusedUnrun reports whether err is Redis's answer that it did not run
// the command, so that sending it again cannot run it twice, and why.
func refusedUnrun(err error) (reason string, r refusal) {
	rerr, isRedis := rueidis.IsRedisErr(err)
	if !isRedis {
		return "", ran
	}
	switch {
	case rerr.IsTryAgain():
		return "TRYAGAIN, its slot is being migrated", refusedNow
	case rerr.IsClusterDown():
		return "CLUSTERDOWN", refusedNow
	case rerr.IsLoading():
		return "LOADING", refusedNow
	}
	if _, moved := rerr.IsMoved(); moved {
		return "MOVED, its slot has moved", redirected
	}
	if _, ask := rerr.IsAsk(); ask {
		return "ASK, its slot is being migrated", redirected
	}
	return "", ran
}

// typed wraps in [ErrNotRun] an error that says Redis did not run the
// script.
func typed(err error) error {
	if reason, r := refusedUnrun(err); r != ran {
		return fmt.Errorf("%w (%s): %w", ErrNotRun, reason, err)
	}
	return err
}

// unrunBackoff spaces the tries of a script Redis refused without running
// it: a slot migration's keys move in milliseconds, a failover takes
// seconds.
func unrunBackoff(attempt int) time.Duration {
	return min(10*time.Millisecond<<min(attempt, 5), 250*time.Millisecond)
}

// again waits before sending again a script that Redis refused without
// running it, and reports false, without waiting, for any other answer
// or when ctx ends first.
func again(ctx context.Context, res rueidis.RedisResult, attempt int) bool {
	// rueidis follows MOVED and ASK itself; one that is left is surfaced.
	if _, r := refusedUnrun(res.Error()); r != refusedNow {
		return false
	}
	t := time.NewTimer(unrunBackoff(attempt))
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
