module github.com/leasehold/leasehold/drivers/sql

go 1.26.0

require (
	github.com/go-sql-driver/mysql v1.10.2
	github.com/leasehold/leasehold/core v0.0.0
)

require filippo.io/edwards25519 v1.2.0 // indirect

replace github.com/leasehold/leasehold/core => ../../core
