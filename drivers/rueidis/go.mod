module github.com/leasehold/leasehold/drivers/rueidis

go 1.26.0

require (
	github.com/leasehold/leasehold/core v0.0.0
	github.com/redis/rueidis v1.0.80
)

require golang.org/x/sys v0.50.0 // indirect

replace github.com/leasehold/leasehold/core => ../../core
