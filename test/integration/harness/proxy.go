package harness

import (
	"errors"
	"io"
	"net"
	"sync"
	"syscall"
	"time"
)

// Proxy is a TCP proxy on a fixed 127.0.0.1 port in front of the
// kube-apiserver. It forwards bytes (TLS passes through untouched), so a
// client cannot tell it from the apiserver, and it can fail the way a network
// or a host does: Sever closes every open connection and stops listening
// (new connections are refused), Restore listens again on the same port.
type Proxy struct {
	// Kubeconfig reaches the apiserver through this proxy (set by
	// Env.NewProxy; empty for the front proxy of a restartable apiserver,
	// which Env.Kubeconfig already uses).
	Kubeconfig string

	addr string

	mu      sync.Mutex
	target  string
	ln      net.Listener // nil while severed
	conns   map[net.Conn]struct{}
	closed  bool
	severed int // how many times Sever cut the proxy
}

// newProxy listens on a free 127.0.0.1 port and forwards to target
// (host:port). An empty target refuses nothing but forwards nowhere: set it
// with SetTarget before clients connect.
func newProxy(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{addr: ln.Addr().String(), target: target, conns: map[net.Conn]struct{}{}}
	p.ln = ln
	go p.serve(ln)
	return p, nil
}

// Addr is the proxy's host:port; it does not change for the proxy's life.
func (p *Proxy) Addr() string { return p.addr }

// SetTarget makes new connections go to target (host:port); open ones keep
// their backend.
func (p *Proxy) SetTarget(target string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.target = target
}

// Sever cuts the proxy: it closes every open connection (both ends) and
// stops listening, so clients see their streams end and new connections
// refused until Restore. It is idempotent.
func (p *Proxy) Sever() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		_ = p.ln.Close()
		p.ln = nil
		p.severed++
	}
	for c := range p.conns {
		_ = c.Close()
	}
	clear(p.conns)
}

// Restore listens again on the proxy's address after Sever. It is a no-op
// when the proxy listens.
func (p *Proxy) Restore() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return errors.New("proxy closed")
	}
	if p.ln != nil {
		return nil
	}
	var ln net.Listener
	var err error
	// The port was ours a moment ago; retry briefly should the kernel still
	// hold it.
	for deadline := time.Now().Add(5 * time.Second); ; {
		ln, err = net.Listen("tcp", p.addr)
		if err == nil || !errors.Is(err, syscall.EADDRINUSE) || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		return err
	}
	p.ln = ln
	go p.serve(ln)
	return nil
}

// Severed reports how many times Sever cut the proxy.
func (p *Proxy) Severed() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.severed
}

// Close severs the proxy for good.
func (p *Proxy) Close() {
	p.Sever()
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
}

func (p *Proxy) serve(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return // closed by Sever or Close
		}
		go p.forward(ln, c)
	}
}

// forward pipes c to a new connection to the target until either side ends.
func (p *Proxy) forward(ln net.Listener, c net.Conn) {
	p.mu.Lock()
	target := p.target
	live := p.ln == ln && target != ""
	if live {
		p.conns[c] = struct{}{}
	}
	p.mu.Unlock()
	if !live {
		_ = c.Close()
		return
	}
	backend, err := net.DialTimeout("tcp", target, 5*time.Second)
	p.mu.Lock()
	if err != nil || p.ln != ln {
		// The backend is down, or the proxy was severed while dialling.
		delete(p.conns, c)
		p.mu.Unlock()
		_ = c.Close()
		if backend != nil {
			_ = backend.Close()
		}
		return
	}
	p.conns[backend] = struct{}{}
	p.mu.Unlock()

	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		done <- struct{}{}
	}
	go pipe(backend, c)
	go pipe(c, backend)
	<-done
	_ = c.Close()
	_ = backend.Close()
	<-done
	p.mu.Lock()
	delete(p.conns, c)
	delete(p.conns, backend)
	p.mu.Unlock()
}
