package cli

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
)

// The runner and the supervisor of leasehold run talk over two pipes, one
// line per message. The runner's standard output carries its reports:
//
//	deadline N   the store confirmed an acquisition or renewal: the lease is
//	             safe until N on the boot clock (see bootNanos), in ns
//	token N      the lease is taken with fencing token N: run the command
//	lost TEXT    the lease is lost (TEXT says why): stop the command
//
// The runner's standard input carries the supervisor's orders:
//
//	pgid N       the command runs in process group N (for the runner to kill
//	             if the supervisor dies)
//	done         the command and everything it started are gone: release
//
// End of input without done means the supervisor died.
const (
	msgDeadline = "deadline"
	msgToken    = "token"
	msgLost     = "lost"
	msgPgid     = "pgid"
	msgDone     = "done"
)

// message is one line of the protocol: a verb and its argument.
type message struct {
	verb string
	arg  string
}

// int64Arg is the message's argument as an integer; ok is false if it is
// not one.
func (m message) int64Arg() (int64, bool) {
	n, err := strconv.ParseInt(m.arg, 10, 64)
	return n, err == nil
}

// sender writes messages to a pipe; it is safe for concurrent use. A failed
// write is dropped: the other end is gone, and its death is handled there.
type sender struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *sender) send(verb string, arg any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fmt.Fprintf(s.w, "%s %v\n", verb, oneLine(fmt.Sprint(arg)))
}

// receive reads messages from r into a channel, closed at the end of r.
func receive(r io.Reader) <-chan message {
	ch := make(chan message, 16)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			verb, arg, _ := strings.Cut(sc.Text(), " ")
			ch <- message{verb: verb, arg: arg}
		}
	}()
	return ch
}
