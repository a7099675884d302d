package gocronguard_test

import (
	"context"
	"log"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/go-co-op/gocron/v2"
	"github.com/leasehold/leasehold/adapters/gocronguard"
	"github.com/leasehold/leasehold/core"
)

// Each instance fires every job; the first to lock a tick runs it.
func ExampleNewLocker() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	locks, err := core.New(core.NewMemoryStore()) // a shared store in a real service
	if err != nil {
		log.Fatal(err)
	}
	locker, err := gocronguard.NewLocker(locks, gocronguard.WithKeyPrefix("gocron:"))
	if err != nil {
		log.Fatal(err)
	}
	s, err := gocron.NewScheduler(gocron.WithDistributedLocker(locker))
	if err != nil {
		log.Fatal(err)
	}
	_, err = s.NewJob(gocron.CronJob("0 */5 * * * *", true),
		gocron.NewTask(func() { /* send the invoices */ }),
		gocron.WithName("billing:invoices")) // the lock key: set it, keep it stable
	if err != nil {
		log.Fatal(err)
	}
	s.Start()

	<-ctx.Done()
	_ = s.Shutdown()
	shutdown, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_ = locks.Close(shutdown)
}

// A task made by Locker.Task runs under its run's lock: its context gives
// the fencing token for the run's writes.
func ExampleLocker_Task() {
	locks, err := core.New(core.NewMemoryStore()) // a shared store in a real service
	if err != nil {
		log.Fatal(err)
	}
	locker, err := gocronguard.NewLocker(locks)
	if err != nil {
		log.Fatal(err)
	}
	s, err := gocron.NewScheduler(gocron.WithDistributedLocker(locker))
	if err != nil {
		log.Fatal(err)
	}
	_, err = s.NewJob(gocron.DurationJob(time.Minute),
		locker.Task(func(ctx context.Context) error {
			token := core.LockFromContext(ctx).Token()
			// Write with token, to a resource that refuses a lower one; ctx
			// ends if the run's lock is lost.
			_ = token
			return nil
		}),
		gocron.WithName("billing:export"))
	if err != nil {
		log.Fatal(err)
	}
	s.Start()
}

// Only the elected leader runs the schedule.
func ExampleNewElector() {
	locks, err := core.New(core.NewMemoryStore())
	if err != nil {
		log.Fatal(err)
	}
	elector, err := gocronguard.NewElector(locks, "scheduler-leader", core.Campaign{
		TTL:    15 * time.Second,
		OnLost: func(err error) { log.Printf("no longer the scheduler leader: %v", err) },
	})
	if err != nil {
		log.Fatal(err)
	}
	s, err := gocron.NewScheduler(gocron.WithDistributedElector(elector))
	if err != nil {
		log.Fatal(err)
	}
	_, _ = s.NewJob(gocron.DurationJob(time.Minute), gocron.NewTask(func() { /* compact the tables */ }), gocron.WithName("compact"))
	s.Start()
}
