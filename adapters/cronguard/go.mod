module github.com/leasehold/leasehold/adapters/cronguard

go 1.25.0

require (
	github.com/leasehold/leasehold/core v0.0.0
	github.com/robfig/cron/v3 v3.0.1
)

replace github.com/leasehold/leasehold/core => ../../core
