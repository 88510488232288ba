package env

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"
)

// proxyDialTimeout bounds the connection to the target of a new client.
const proxyDialTimeout = 10 * time.Second

// Proxy forwards TCP connections from a loopback port to a target and, on
// demand, misbehaves like a network or server in trouble: Stall holds every
// byte (requests hang), Drop cuts every connection (the server went away).
// It sees only bytes, so TLS between client and target stays end to end.
// Its methods are safe for concurrent use.
type Proxy struct {
	target string
	ln     net.Listener
	ctx    context.Context // canceled by Close
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	mode    proxyMode
	resumed chan struct{} // closed when the current stall ends
	conns   map[*proxyConn]struct{}
	closed  bool
}

type proxyMode int

const (
	forwarding proxyMode = iota
	stalled
	dropping
)

// proxyConn is one client connection and its connection to the target.
type proxyConn struct {
	client, upstream net.Conn
	closed           chan struct{}
	once             sync.Once
}

func (c *proxyConn) close() {
	c.once.Do(func() {
		close(c.closed)
		_ = c.client.Close()
		_ = c.upstream.Close()
	})
}

// NewProxy listens on 127.0.0.1 (a free port, see Addr) and forwards every
// connection to target (host:port).
func NewProxy(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("proxy to %s: %w", target, err)
	}
	p := &Proxy{target: target, ln: ln, conns: map[*proxyConn]struct{}{}}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	p.wg.Add(1)
	go p.serve()
	return p, nil
}

// Addr is the proxy's host:port, for clients (see Env.KubeconfigVia).
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Stall stops forwarding in both directions on every connection, open or
// new, until Resume: new connections are still accepted, and the bytes
// already sent wait (in the proxy and in socket buffers) and are delivered
// after Resume. Clients see requests that hang.
func (p *Proxy) Stall() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mode != stalled {
		p.mode, p.resumed = stalled, make(chan struct{})
	}
}

// Drop closes every open connection and, until Resume, closes new ones as
// soon as they are accepted. Clients see their connections end (EOF or a
// reset) and their new ones fail, not hang.
func (p *Proxy) Drop() {
	p.mu.Lock()
	p.setMode(dropping)
	open := p.openConns()
	// No longer forwarded from now on (Conns), though their goroutines
	// may take a moment to notice the close.
	for _, c := range open {
		delete(p.conns, c)
	}
	p.mu.Unlock()
	for _, c := range open {
		c.close()
	}
}

// Resume goes back to forwarding: stalled bytes flow again and new
// connections are kept. Connections cut by Drop stay closed.
func (p *Proxy) Resume() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.setMode(forwarding)
}

// Conns is the number of connections being forwarded now.
func (p *Proxy) Conns() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.conns)
}

// Close stops listening, closes every connection and returns once all the
// proxy's goroutines are gone. Closing twice is a no-op.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	p.cancel() // also aborts dials in progress
	open := p.openConns()
	p.mu.Unlock()
	err := p.ln.Close()
	for _, c := range open {
		c.close()
	}
	p.wg.Wait()
	return err
}

// setMode switches modes, ending a stall; p.mu is held.
func (p *Proxy) setMode(m proxyMode) {
	if p.mode == stalled && m != stalled {
		close(p.resumed)
	}
	p.mode = m
}

// openConns lists the registered connections; p.mu is held.
func (p *Proxy) openConns() []*proxyConn {
	open := make([]*proxyConn, 0, len(p.conns))
	for c := range p.conns {
		open = append(open, c)
	}
	return open
}

func (p *Proxy) serve() {
	defer p.wg.Done()
	for {
		client, err := p.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// E.g. out of file descriptors: back off rather than spin.
			select {
			case <-p.ctx.Done():
				return
			case <-time.After(10 * time.Millisecond):
			}
			continue
		}
		p.mu.Lock()
		refuse := p.closed || p.mode == dropping
		if !refuse {
			p.wg.Add(1)
		}
		p.mu.Unlock()
		if refuse {
			_ = client.Close()
			continue
		}
		go p.handle(client)
	}
}

// handle connects client to the target and forwards until either side
// closes (then both are closed: no half-open connections) or the proxy
// drops or closes it.
func (p *Proxy) handle(client net.Conn) {
	defer p.wg.Done()
	ctx, cancel := context.WithTimeout(p.ctx, proxyDialTimeout)
	upstream, err := (&net.Dialer{}).DialContext(ctx, "tcp", p.target)
	cancel()
	if err != nil {
		_ = client.Close()
		return
	}
	c := &proxyConn{client: client, upstream: upstream, closed: make(chan struct{})}
	p.mu.Lock()
	if p.closed || p.mode == dropping { // changed while dialing
		p.mu.Unlock()
		c.close()
		return
	}
	p.conns[c] = struct{}{}
	p.mu.Unlock()

	var pipes sync.WaitGroup
	pipes.Go(func() { p.pipe(c, upstream, client) })
	pipes.Go(func() { p.pipe(c, client, upstream) })
	pipes.Wait()

	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}

// pipe copies src to dst, holding each chunk while the proxy is stalled,
// and closes the connection when either side ends.
func (p *Proxy) pipe(c *proxyConn, dst, src net.Conn) {
	defer c.close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if !p.waitForward(c) {
				return
			}
			if _, err := dst.Write(buf[:n]); err != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// waitForward blocks while the proxy is stalled; false if the connection
// was closed meanwhile.
func (p *Proxy) waitForward(c *proxyConn) bool {
	for {
		p.mu.Lock()
		mode, resumed := p.mode, p.resumed
		p.mu.Unlock()
		switch mode {
		case dropping:
			return false // a stall ended by Drop delivers nothing
		case stalled:
		default:
			return true
		}
		select {
		case <-resumed:
		case <-c.closed:
			return false
		}
	}
}
