// Command etcdmember runs one etcd member, configured as the tests'
// embedded members are (internal/testserver/etcdserver), in a process of
// its own, so that a benchmark's CPU and allocation figures count the
// client alone:
//
//	go run ./internal/testserver/etcdserver/cmd/etcdmember -client 127.0.0.1:23790 &
//	LEASEHOLD_TEST_ETCD=http://127.0.0.1:23790 go test -run '^$' -bench . -benchmem
//
// It keeps its data in a temporary directory, removed when it stops on
// SIGINT or SIGTERM.
package main

import (
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/leasehold/leasehold/internal/testserver/etcdserver"
)

func main() {
	client := flag.String("client", "127.0.0.1:23790", "the client address to listen on")
	peer := flag.String("peer", "127.0.0.1:23800", "the peer address to listen on")
	flag.Parse()
	if err := serve(*client, *peer); err != nil {
		slog.Error("etcdmember", "err", err)
		os.Exit(1)
	}
}

func serve(client, peer string) error {
	dir, err := os.MkdirTemp("", "etcdmember")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	e, err := etcdserver.Serve(dir, client, peer)
	if err != nil {
		return err
	}
	defer e.Close()
	fmt.Printf("http://%s\n", e.Clients[0].Addr())
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	select {
	case <-stop:
		return nil
	case err := <-e.Err():
		return err
	}
}
