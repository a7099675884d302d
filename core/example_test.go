package core_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/leasehold/leasehold/core"
)

func ExampleLocks_Acquire() {
	ctx := context.Background()
	locks, err := core.New(core.NewMemoryStore())
	if err != nil {
		log.Fatal(err)
	}
	defer locks.Close(ctx)

	lock, err := locks.Acquire(ctx, "reports/daily")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("holding", lock.Key(), "with token", lock.Token())

	// While it is held, nobody else takes the key.
	_, err = locks.Acquire(ctx, "reports/daily")
	fmt.Println("second acquire refused:", errors.Is(err, core.ErrNotAcquired))

	if err := lock.Release(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Println("held after release:", lock.Held())
	// Output:
	// holding reports/daily with token 1
	// second acquire refused: true
	// held after release: false
}

func ExampleLocks_WithLock() {
	ctx := context.Background()
	locks, err := core.New(core.NewMemoryStore())
	if err != nil {
		log.Fatal(err)
	}
	defer locks.Close(ctx)

	err = locks.WithLock(ctx, "invoices/42", func(ctx context.Context) error {
		// ctx is cancelled if the lock is lost. Send the fencing token
		// with every write, to a resource that refuses stale tokens.
		lock := core.LockFromContext(ctx)
		fmt.Printf("writing invoice 42 with fencing token %d\n", lock.Token())
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	// Output:
	// writing invoice 42 with fencing token 1
}

// A process that pauses past its lock's ttl finds out on its next renewal.
// The store and the process each have their own ManualClock, so the test
// can move the store's time while the process's stands still.
func ExampleManualClock() {
	ctx := context.Background()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	storeClock := core.NewManualClock(start)
	processClock := core.NewManualClock(start)
	store := core.NewMemoryStore(core.WithMemoryClock(storeClock))

	locks, err := core.New(store,
		core.WithClock(processClock),
		core.WithEventHandler(func(ev core.Event) {
			fmt.Println("event:", ev.Type, ev.Key)
		}))
	if err != nil {
		log.Fatal(err)
	}
	defer locks.Close(ctx)
	lock, err := locks.Acquire(ctx, "billing", core.WithTTL(30*time.Second))
	if err != nil {
		log.Fatal(err)
	}

	// The process pauses for 40s: the lock expires in the store, and
	// another instance takes it.
	storeClock.Advance(40 * time.Second)
	other, err := core.New(store, core.WithClock(storeClock))
	if err != nil {
		log.Fatal(err)
	}
	defer other.Close(ctx)
	if _, err := other.Acquire(ctx, "billing"); err != nil {
		log.Fatal(err)
	}

	// The process resumes; its next renewal, due at 10s, is refused.
	processClock.Advance(10 * time.Second)
	<-lock.Done()
	var lost *core.LockLostError
	if errors.As(context.Cause(lock.Context()), &lost) {
		fmt.Println("lost:", lost.Reason)
	}
	// Output:
	// event: lock-lost billing
	// lost: refused by the store
}
