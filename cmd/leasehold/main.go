// Command leasehold runs a command under a distributed lease, lists the
// live locks of a store, and shows the library at work in a demo.
//
//	leasehold demo [--debug]
//	leasehold run [--store URL] [--key K] [--ttl D] [--wait D] [--grace D] -- command [args...]
//	leasehold status [--store URL] [--prefix P] [--format table|json]
//	leasehold version
//
// Run leasehold help, or read the page "The leasehold command" of the
// leasehold documentation.
package main

import (
	"os"

	"github.com/leasehold/leasehold/internal/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:], os.Stdout, os.Stderr))
}
