package core

import (
	"fmt"
	"strconv"
	"strings"
)

// EnvInstances names the environment variable that tells [New] how many
// instances of the service run at once, for the memory store's guard. Set
// it where the deployment sets the instance count (a Kubernetes
// Deployment's replicas, a Compose service's scale, a systemd template's
// instances): with a value above 1, New refuses a [MemoryStore] with
// [ErrMemoryStoreRefused], since each instance would have its own store and
// take every lock. 1, or unset, lets it start (with a warning in the log).
// A value that is not a whole number above 0 is refused with
// [ErrInvalidArgument]. docs/production.md says why the guard reads this
// variable and no platform's.
const EnvInstances = "LEASEHOLD_INSTANCES"

// AllowMemoryStore lets [New] start on a [MemoryStore] whatever
// [EnvInstances] says, for a process that runs several [Locks] instances
// on one MemoryStore it shares between them (a test of several instances,
// say), or a deployment that knows better. New still logs the store's
// limit.
func AllowMemoryStore() Option { return func(c *config) { c.memoryAllowed = true } }

// guardMemoryStore refuses a MemoryStore when getenv's EnvInstances says
// the service runs as several instances, unless allowed.
func guardMemoryStore(store LockStore, allowed bool, getenv func(string) string) error {
	if _, ok := store.(*MemoryStore); !ok || allowed {
		return nil
	}
	v := strings.TrimSpace(getenv(EnvInstances))
	if v == "" {
		return nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return fmt.Errorf("%w: %s=%q is not a whole number of instances above 0", ErrInvalidArgument, EnvInstances, v)
	}
	if n > 1 {
		return fmt.Errorf("%w: %s=%d, and the memory store excludes callers in this process only, so every instance would take every lock: give the instances a shared store (see docs/production.md), or pass core.AllowMemoryStore() to start anyway",
			ErrMemoryStoreRefused, EnvInstances, n)
	}
	return nil
}
