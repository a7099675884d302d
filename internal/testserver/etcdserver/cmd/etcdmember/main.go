// Command etcdmember runs one etcd member, configured as the tests'
// embedded members are (internal/testserver/etcdserver), in a process of
// its own: etcdserver.Endpoints starts it for the conformance kit and the
// benchmarks, built without the race detector, as a real etcd is a server
// of its own. It can also be started by hand:
//
//	go run ./internal/testserver/etcdserver/cmd/etcdmember -client 127.0.0.1:23790 &
//	LEASEHOLD_TEST_ETCD=http://127.0.0.1:23790 go test -run '^$' -bench . -benchmem
//
// It prints its client URL once it serves clients, and stops on SIGINT or
// SIGTERM, or, with -stdin, when its standard input ends (the test that
// started it has exited, however it ended). It keeps its data in -dir, or
// in a temporary directory it removes when it stops.
package main

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/leasehold/leasehold/internal/testserver/etcdserver"
)

func main() {
	client := flag.String("client", "127.0.0.1:23790", "the client address to listen on")
	peer := flag.String("peer", "127.0.0.1:23800", "the peer address to listen on")
	dir := flag.String("dir", "", "the data directory (default: a temporary one, removed on exit)")
	stdin := flag.Bool("stdin", false, "stop when standard input ends")
	flag.Parse()
	if err := serve(*client, *peer, *dir, *stdin); err != nil {
		slog.Error("etcdmember", "err", err)
		os.Exit(1)
	}
}

func serve(client, peer, dir string, stdin bool) error {
	if dir == "" {
		tmp, err := os.MkdirTemp("", "etcdmember")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	}
	e, err := etcdserver.Serve(dir, client, peer)
	if err != nil {
		return err
	}
	defer e.Close()
	fmt.Printf("http://%s\n", e.Clients[0].Addr())
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	ended := make(chan struct{})
	if stdin {
		go func() {
			_, _ = io.Copy(io.Discard, os.Stdin)
			close(ended)
		}()
	}
	select {
	case <-stop:
		return nil
	case <-ended:
		return nil
	case err := <-e.Err():
		return err
	}
}
