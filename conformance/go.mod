module github.com/leasehold/leasehold/conformance

go 1.26.0

require (
	github.com/anishathalye/porcupine v1.3.1
	github.com/leasehold/leasehold/core v0.0.0
)

replace github.com/leasehold/leasehold/core => ../core
