module github.com/leasehold/leasehold

go 1.26.0

require github.com/leasehold/leasehold/core v0.0.0

replace github.com/leasehold/leasehold/core => ./core
