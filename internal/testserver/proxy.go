package testserver

import (
	"bytes"
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// Proxy is a loopback TCP proxy in front of a server, for fault-injection
// tests: point a client at [Proxy.Addr] instead of the server, then add
// latency, stall the traffic, reset every connection, refuse new ones, or
// cut the reply to one request. It works on raw bytes, so it serves every
// protocol; it is the network between a service and its store going wrong.
type Proxy struct {
	t        testing.TB
	target   string
	listener net.Listener

	mu      sync.Mutex
	cond    *sync.Cond // signalled when stalled goes false or the proxy closes
	conns   map[*proxyConn]struct{}
	latency time.Duration
	stalled bool
	refuse  bool
	cut     *cutReply
	closed  bool
	writes  int // chunks forwarded from clients to the server
	trips   int // replies forwarded to a client that had sent a request since its last reply
	wg      sync.WaitGroup
}

// cutReply is an armed "lose the reply" fault: the next request whose bytes
// contain pattern (any request if nil) is forwarded, and its connection is
// reset instead of forwarding the reply.
type cutReply struct {
	pattern []byte
	done    chan struct{} // closed once a reply was cut
}

type proxyConn struct {
	client, server *net.TCPConn
	cutArmed       bool // under Proxy.mu: the next reply on this connection is cut
	asked          bool // under Proxy.mu: the client has sent bytes since the last reply
}

// NewProxy starts a proxy on a free loopback port that forwards to target
// (host:port). It stops, closing every connection, when t ends.
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("testserver: proxy: %v", err)
	}
	p := &Proxy{t: t, target: target, listener: l, conns: map[*proxyConn]struct{}{}}
	p.cond = sync.NewCond(&p.mu)
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.Close)
	return p
}

// Addr returns the proxy's address, host:port.
func (p *Proxy) Addr() string { return p.listener.Addr().String() }

// Port returns the proxy's port.
func (p *Proxy) Port() int { return p.listener.Addr().(*net.TCPAddr).Port }

// SetLatency delays every chunk of bytes, in each direction, by d (0: none),
// so a round trip costs at least 2 × d more.
func (p *Proxy) SetLatency(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.latency = d
}

// Stall makes the proxy accept bytes and forward none, on every connection
// and on new ones, until [Proxy.Resume]: a network that silently drops
// traffic. Clients see no error, only calls that never return.
func (p *Proxy) Stall() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stalled = true
}

// Resume ends a [Proxy.Stall]; what was held back is forwarded.
func (p *Proxy) Resume() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stalled = false
	p.cond.Broadcast()
}

// ResetAll resets every open connection (TCP RST to both sides), as a
// server crash or a middlebox dropping its state would. It returns how many
// connections it reset.
func (p *Proxy) ResetAll() int {
	p.mu.Lock()
	conns := make([]*proxyConn, 0, len(p.conns))
	for c := range p.conns {
		conns = append(conns, c)
	}
	p.mu.Unlock()
	for _, c := range conns {
		c.reset()
	}
	return len(conns)
}

// Refuse makes the proxy reset new connections at once (refuse true) or
// accept them again (false). Open connections are not touched.
func (p *Proxy) Refuse(refuse bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.refuse = refuse
}

// CutReply arms a one-shot fault: the next request whose bytes contain
// pattern (any request, if pattern is nil) reaches the server, and the
// connection is then reset instead of carrying the server's reply back. The
// client sees a broken connection; the server did the work. The returned
// channel is closed once a reply has been cut.
func (p *Proxy) CutReply(pattern []byte) <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = &cutReply{pattern: pattern, done: make(chan struct{})}
	return p.cut.done
}

// Requests returns how many chunks of bytes clients have sent to the server
// through the proxy. A client of a request-reply protocol sends one chunk
// per round trip, so the difference across a call counts its round trips.
func (p *Proxy) Requests() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.writes
}

// RoundTrips returns how many times a server has answered a client that
// had sent something since its previous answer: a call's round trips. A
// message that gets no reply (MySQL's COM_STMT_CLOSE) costs none, and
// counts with the request after it; it is counted when the reply passes
// the proxy, so once a call has returned, its round trips are all counted.
func (p *Proxy) RoundTrips() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.trips
}

// Conns returns how many connections are open through the proxy.
func (p *Proxy) Conns() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.conns)
}

// Close stops the proxy and closes every connection through it.
func (p *Proxy) Close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	p.cond.Broadcast()
	p.mu.Unlock()
	p.listener.Close()
	p.ResetAll()
	p.wg.Wait()
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.listener.Accept()
		if err != nil {
			return
		}
		client := c.(*net.TCPConn)
		p.mu.Lock()
		refuse := p.refuse || p.closed
		p.mu.Unlock()
		if refuse {
			client.SetLinger(0)
			client.Close()
			continue
		}
		p.wg.Add(1)
		go p.serve(client)
	}
}

func (p *Proxy) serve(client *net.TCPConn) {
	defer p.wg.Done()
	s, err := net.DialTimeout("tcp", p.target, 5*time.Second)
	if err != nil {
		client.SetLinger(0)
		client.Close()
		return
	}
	pc := &proxyConn{client: client, server: s.(*net.TCPConn)}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		pc.reset()
		return
	}
	p.conns[pc] = struct{}{}
	p.mu.Unlock()

	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); p.pipe(pc, pc.client, pc.server, true) }()
	go func() { defer wg.Done(); p.pipe(pc, pc.server, pc.client, false) }()
	wg.Wait()
	p.mu.Lock()
	delete(p.conns, pc)
	p.mu.Unlock()
}

// pipe copies from src to dst, chunk by chunk, applying the faults. Either
// side ending resets both, so neither client nor server waits on a half
// of a connection.
func (p *Proxy) pipe(pc *proxyConn, src, dst *net.TCPConn, request bool) {
	defer pc.reset()
	buf := make([]byte, 64<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if !p.forward(pc, dst, buf[:n], request) {
				return
			}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				return
			}
			// A clean close: pass it on.
			dst.CloseWrite()
			return
		}
	}
}

// forward applies latency, stalls and cuts to one chunk, and writes it. It
// reports whether the connection goes on.
func (p *Proxy) forward(pc *proxyConn, dst *net.TCPConn, chunk []byte, request bool) bool {
	p.mu.Lock()
	latency := p.latency
	p.mu.Unlock()
	if latency > 0 {
		time.Sleep(latency)
	}
	p.mu.Lock()
	for p.stalled && !p.closed {
		p.cond.Wait()
	}
	if p.closed {
		p.mu.Unlock()
		return false
	}
	if request {
		p.writes++
		pc.asked = true
		if p.cut != nil && (p.cut.pattern == nil || bytes.Contains(chunk, p.cut.pattern)) {
			pc.cutArmed = true
		}
	}
	if !request && pc.asked {
		p.trips++
		pc.asked = false
	}
	var cutNow *cutReply
	if !request && pc.cutArmed {
		cutNow = p.cut
		p.cut, pc.cutArmed = nil, false
	}
	p.mu.Unlock()
	if cutNow != nil {
		pc.reset()
		close(cutNow.done)
		return false
	}
	_, err := dst.Write(chunk)
	return err == nil
}

// reset ends both sides of the connection with a TCP RST.
func (pc *proxyConn) reset() {
	for _, c := range []*net.TCPConn{pc.client, pc.server} {
		c.SetLinger(0)
		c.Close()
	}
}
