package cronguard_test

import (
	"context"
	"log"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/leasehold/leasehold/adapters/cronguard"
	"github.com/leasehold/leasehold/core"
	"github.com/robfig/cron/v3"
)

func sendInvoices(ctx context.Context) error {
	// Pass core.LockFromContext(ctx).Token() with every write the run makes.
	return nil
}

// Every instance of the service schedules the same job; one instance runs
// each tick, and a run never overlaps another.
func ExampleAddFunc() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	store := core.NewMemoryStore() // a shared store (SQL, Redis) in a real service
	locks, err := core.New(store)
	if err != nil {
		log.Fatal(err)
	}
	c := cron.New(cron.WithSeconds())
	if _, _, err := cronguard.AddFunc(c, locks, "0 */5 * * * *", "billing:invoices", sendInvoices,
		core.OnOneInstance(), core.WithoutOverlapping()); err != nil {
		log.Fatal(err)
	}
	c.Start()

	<-ctx.Done()
	<-c.Stop().Done() // no new ticks; wait for the ticks in progress
	shutdown, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := locks.Close(shutdown); err != nil {
		log.Print(err)
	}
}

// Guard wraps an existing cron.Job; the key is given explicitly because a
// cron.Job has no name.
func ExampleGuard() {
	locks, err := core.New(core.NewMemoryStore())
	if err != nil {
		log.Fatal(err)
	}
	var cleanup cron.Job = cron.FuncJob(func() { /* delete expired sessions */ })

	c := cron.New()
	c.AddJob("@hourly", cron.NewChain(cronguard.Guard(locks, "sessions:cleanup", core.OnOneInstance())).Then(cleanup))
	c.Start()
}
