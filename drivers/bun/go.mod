module github.com/leasehold/leasehold/drivers/bun

go 1.26.0

require (
	github.com/leasehold/leasehold/core v0.0.0
	github.com/leasehold/leasehold/drivers/sql v0.0.0
	github.com/uptrace/bun v1.2.18
)

require (
	filippo.io/edwards25519 v1.2.0 // indirect
	github.com/go-sql-driver/mysql v1.10.2 // indirect
	github.com/jinzhu/inflection v1.0.0 // indirect
	github.com/puzpuzpuz/xsync/v3 v3.5.1 // indirect
	github.com/tmthrgd/go-hex v0.0.0-20190904060850-447a3041c3bc // indirect
	github.com/vmihailenco/msgpack/v5 v5.4.1 // indirect
	github.com/vmihailenco/tagparser/v2 v2.0.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
)

replace (
	github.com/leasehold/leasehold/core => ../../core
	github.com/leasehold/leasehold/drivers/sql => ../sql
)
