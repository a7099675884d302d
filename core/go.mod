module github.com/leasehold/leasehold/core

go 1.25.0
