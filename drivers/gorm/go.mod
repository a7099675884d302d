module github.com/leasehold/leasehold/drivers/gorm

go 1.26.0

require (
	github.com/leasehold/leasehold/core v0.0.0
	github.com/leasehold/leasehold/drivers/sql v0.0.0
	gorm.io/gorm v1.31.2
)

require (
	filippo.io/edwards25519 v1.2.0 // indirect
	github.com/go-sql-driver/mysql v1.10.2 // indirect
	github.com/jinzhu/inflection v1.0.0 // indirect
	github.com/jinzhu/now v1.1.5 // indirect
	golang.org/x/text v0.43.0 // indirect
)

replace (
	github.com/leasehold/leasehold/core => ../../core
	github.com/leasehold/leasehold/drivers/sql => ../sql
)
