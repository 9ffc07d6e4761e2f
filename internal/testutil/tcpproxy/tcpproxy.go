// Package tcpproxy is a TCP proxy for fault tests: it forwards every
// connection to one target until the test cuts it, as a network partition
// would, and can heal the cut. While cut, every open connection is closed
// and new ones are accepted and dropped at once, so the client sees its
// connections fail and cannot open new ones.
package tcpproxy

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
)

// Proxy forwards connections from its own address to a target.
type Proxy struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	cut   bool
	conns map[net.Conn]struct{} // both ends of every forwarded connection
	wg    sync.WaitGroup
}

// Start listens on a free port of 127.0.0.1 and forwards to target
// (host:port).
func Start(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("start proxy: %w", err)
	}
	p := &Proxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the host:port clients connect to.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Cut closes every open connection and drops new ones until Heal.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
	for c := range p.conns {
		c.Close()
		delete(p.conns, c)
	}
}

// Heal forwards new connections again.
func (p *Proxy) Heal() {
	p.mu.Lock()
	p.cut = false
	p.mu.Unlock()
}

// Close stops listening, closes every connection and waits for the
// forwarding goroutines to end.
func (p *Proxy) Close() error {
	err := p.ln.Close()
	p.Cut()
	p.wg.Wait()
	return err
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if errors.Is(err, net.ErrClosed) {
			return
		}
		if err != nil {
			continue
		}
		p.wg.Add(1)
		go p.forward(c)
	}
}

// forward connects c to the target and copies both ways until either side
// closes or the proxy is cut.
func (p *Proxy) forward(c net.Conn) {
	defer p.wg.Done()
	if !p.track(c) {
		return
	}
	up, err := net.Dial("tcp", p.target)
	if err != nil || !p.track(up) {
		if up != nil {
			up.Close()
		}
		p.untrack(c)
		return
	}
	var both sync.WaitGroup
	both.Add(2)
	pipe := func(dst, src net.Conn) {
		defer both.Done()
		io.Copy(dst, src)
		// One direction ended: end the other too.
		dst.Close()
		src.Close()
	}
	go pipe(up, c)
	go pipe(c, up)
	both.Wait()
	p.untrack(c)
	p.untrack(up)
}

// track registers an open connection, or closes it and reports false while
// the proxy is cut.
func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cut {
		c.Close()
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	c.Close()
}
