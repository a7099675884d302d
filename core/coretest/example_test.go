package coretest_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/leasehold/leasehold/core"
	"github.com/leasehold/leasehold/core/coretest"
)

// A holder whose lock was taken over writes with its old token: the
// resource refuses it.
func ExampleFencedResource() {
	var report coretest.FencedResource
	l, _ := core.New(core.NewMemoryStore(), core.WithLogger(new(coretest.LogBuffer).Logger()))
	defer l.Close(context.Background())

	old, _ := l.Acquire(context.Background(), "report")
	_ = old.Release(context.Background())
	next, _ := l.Acquire(context.Background(), "report")
	defer next.Release(context.Background())

	fmt.Println(report.Write(next.Token(), "by the new holder"))
	err := report.Write(old.Token(), "late, by the old holder")
	fmt.Println(errors.Is(err, coretest.ErrStaleToken))
	_, value := report.Read()
	fmt.Println(value)
	// Output:
	// <nil>
	// true
	// by the new holder
}

// A test reads back what a Locks logged.
func ExampleLogBuffer() {
	var logs coretest.LogBuffer
	l, _ := core.New(core.NewMemoryStore(), core.WithLogger(logs.Logger()))
	defer l.Close(context.Background())

	lk, _ := l.Acquire(context.Background(), "report")
	_ = lk.Release(context.Background())

	fmt.Println(logs.Count("level=DEBUG", "lock acquired", "key=report"))
	fmt.Println(logs.Count("level=DEBUG", "lock released", "key=report"))
	// Output:
	// 1
	// 1
}
