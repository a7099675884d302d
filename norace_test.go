//go:build !race

package leasehold_test

const raceEnabled = false
