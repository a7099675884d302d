package conformance

// instanceCases is the "instances" group: several core.Locks instances on
// the one store under test, each on a manual clock of its own, running jobs
// and elections as a service's processes would, while the case pauses some
// of them. Expiry stays on the store's clock. The cases check outcomes that
// a service relies on: one runner per job tick, runs that do not overlap,
// one leader, hand-overs on clean shutdown and after a pause, and fencing
// tokens that let a resource refuse a paused holder's late write. The
// helpers live in instance_cluster.go, the cases in instance_jobs.go and
// instance_elections.go.
func instanceCases() []Case {
	cases := []Case{
		{
			Name:    "jobs-one-instance",
			Catches: "a store under which a job guarded by OnOneInstance runs on two instances in one tick, or changes owner while its owner is alive and renewing (for example a Renew that reports success without extending the lease).",
			Fix:     "Make Acquire refuse a live lock and Renew move its owner's expiry to the store's now + ttl; the store cases acquire-held-key and renew-by-holder point at the exact call.",
			run:     jobsOneInstance,
		},
		{
			Name:    "jobs-takeover-after-pause",
			Catches: "a job lease that does not expire on the store's clock ttl after its last renewal when its owner pauses (it never expires, or a renewal extends it past ttl), or a renewal by the paused owner, once it resumes, that the store accepts although another instance took the job over, so the paused run is never cancelled.",
			Fix:     "Expire locks on the store's clock ttl after their last renewal and make Renew check the owner and liveness; the store cases renew-then-expire, renew-by-non-holder and expired-lock-old-owner point at the exact call.",
			run:     jobsTakeoverAfterPause,
		},
		{
			Name:    "jobs-fencing",
			Catches: "fencing tokens that do not grow when an instance takes a job over from a paused one (for example a takeover that keeps the expired lock's token), so that a resource keeping the highest token cannot refuse the paused holder's late write.",
			Fix:     "Give a takeover of an expired lock a token from the growing source, in the statement that takes it over (see the store case tokens-grow).",
			run:     jobsFencing,
		},
		{
			Name:    "jobs-no-overlap",
			Catches: "a run lock that lapses during a long run although its holder renews it, or that stays taken after the run releases it, so that WithoutOverlapping lets runs on different instances overlap or skips the runs after the long one.",
			Fix:     "Make Renew by the holder move the expiry to the store's now + ttl, and Release free the key at once (see the store cases renew-by-holder and release-by-holder).",
			run:     jobsNoOverlap,
		},
		{
			Name:    "jobs-handover-on-close",
			Catches: "a Release that does not free a job's lease when its owner shuts down cleanly, so that the job stops until the lease's ttl runs out, or a next owner whose token is not greater (for example a per-key counter that restarts when Release deletes the record).",
			Fix:     "Make Release free its holder's key at once and keep the key's last token, so that the next Acquire draws a greater one (see the store cases release-by-holder and tokens-grow).",
			run:     jobsHandoverOnClose,
		},
		{
			Name:    "election-one-leader",
			Catches: "a store under which an election has two leaders, or its live leader loses the lead, for example because Renew does not extend the lease or the lease expires early.",
			Fix:     "Make Acquire refuse a live lock and Renew move its owner's expiry to the store's now + ttl (see the store cases acquire-held-key and renew-by-holder).",
			run:     electionOneLeader,
		},
		{
			Name:    "election-handover-on-close",
			Catches: "a leadership lease that the leader's Close does not free, so that the next leader waits for its ttl instead of a campaign, or a new leader whose token is not greater.",
			Fix:     "Make Release free its holder's key at once and keep the key's last token, so that the next Acquire draws a greater one (see the store cases release-by-holder and tokens-grow).",
			run:     electionHandoverOnClose,
		},
		{
			Name:    "election-handover-after-pause",
			Catches: "a leadership lease that does not expire on the store's clock ttl after its last renewal when the leader pauses, or a paused leader whose renewal the store accepts after another instance took over, so that it never learns it lost.",
			Fix:     "Expire locks on the store's clock ttl after their last renewal and make Renew check the owner and liveness (see the store cases renew-then-expire and expired-lock-old-owner).",
			run:     electionHandoverAfterPause,
		},
	}
	for i := range cases {
		cases[i].Group = "instances"
		// Every instance case lets time pass: in real time they sleep, and
		// Run runs them concurrently with the other waiting cases.
		cases[i].Waits = true
	}
	return cases
}
