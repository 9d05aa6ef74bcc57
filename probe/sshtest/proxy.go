package sshtest

import (
	"io"
	"net"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"
)

// Proxy forwards TCP to a host's sshd and can be paused: while paused it
// neither forwards nor closes anything, like a link that went silent (a
// cable pulled, a laptop suspended) — no FIN, no RST.
//
// With a Delay it also plays a distant host: every chunk is delivered
// Delay after it arrived, in each direction (so a round trip costs
// 2×Delay), and each new connection waits one round trip before reaching
// sshd, for the TCP handshake that a loopback connect does not pay. The
// delay is a latency, not a bandwidth limit: chunks are queued with their
// due time and written when due, so any number of them are in flight at
// once, in order.
type Proxy struct {
	Port int
	// Delay is the one-way latency added in each direction (RTT/2).
	Delay  time.Duration
	ln     net.Listener
	target string

	mu     sync.Mutex
	paused bool
	resume chan struct{}
	conns  []net.Conn
}

func startProxy(t testing.TB, addr string, port int, delay time.Duration) *Proxy {
	ln, err := net.Listen("tcp", addr+":0")
	must(t, err)
	p := &Proxy{Port: ln.Addr().(*net.TCPAddr).Port, Delay: delay, ln: ln, target: net.JoinHostPort(addr, itoa(port)), resume: make(chan struct{})}
	go p.serve()
	return p
}

// Pause stops all traffic through the proxy, silently.
func (p *Proxy) Pause() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.paused {
		p.paused = true
		p.resume = make(chan struct{})
	}
}

// Resume lets traffic flow again: what was held is delivered, in order.
func (p *Proxy) Resume() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.paused {
		close(p.resume)
		p.paused = false
	}
}

// Reset drops every connection through it with a TCP reset, as a NAT
// that forgot them or a rebooted router would, and goes on accepting new
// ones.
func (p *Proxy) Reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		if tc, ok := c.(*net.TCPConn); ok {
			tc.SetLinger(0)
		}
		c.Close()
	}
	p.conns = nil
}

// Close stops the proxy and drops its connections.
func (p *Proxy) Close() {
	p.ln.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	if p.paused {
		close(p.resume)
		p.paused = false
	}
}

func (p *Proxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		if p.Delay > 0 {
			go p.connect(c)
		} else {
			p.connect(c)
		}
	}
}

// connect dials sshd for client connection c and starts forwarding.
func (p *Proxy) connect(c net.Conn) {
	if p.Delay > 0 {
		// The TCP handshake's round trip. What the client sends
		// meanwhile waits in the socket and is then delayed as usual.
		time.Sleep(2 * p.Delay)
	}
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		c.Close()
		return
	}
	p.mu.Lock()
	p.conns = append(p.conns, c, up)
	p.mu.Unlock()
	pipe := p.pipe
	if p.Delay > 0 {
		pipe = p.pipeDelayed
	}
	// Both sockets are closed once both directions have ended: left
	// open, every connection ever made kept two descriptors until the
	// proxy closed, and a few dozen runs on 256 answering hosts ran the
	// test process out of them.
	ended := make(chan struct{}, 2)
	go func() { pipe(c, up); ended <- struct{}{} }()
	go func() { pipe(up, c); ended <- struct{}{} }()
	go func() {
		<-ended
		<-ended
		c.Close()
		up.Close()
		p.mu.Lock()
		p.conns = slices.DeleteFunc(p.conns, func(x net.Conn) bool { return x == c || x == up })
		p.mu.Unlock()
	}()
}

// hold blocks while the proxy is paused.
func (p *Proxy) hold() {
	p.mu.Lock()
	paused, resume := p.paused, p.resume
	p.mu.Unlock()
	if paused {
		<-resume
	}
}

// pipe copies in chunks, holding each chunk while paused. src's EOF is
// passed on as one; a failed src (reset, closed) closes dst, as a reset
// ends both directions (the other one's read then fails and it ends).
func (p *Proxy) pipe(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.hold()
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			if err != io.EOF {
				dst.Close()
				return
			}
			closeWrite(dst)
			return
		}
	}
}

// chunk is data read from one side, due for delivery to the other.
type chunk struct {
	data []byte
	due  time.Time
	eof  bool
}

// delayQueue bounds what one direction holds in flight (in chunks of at
// most 32 KiB): far more than an SSH channel window, so never the
// bottleneck, yet a stalled writer cannot make the proxy grow forever.
const delayQueue = 2048

// pipeDelayed copies like pipe, each chunk Delay after it was read. A
// reader stamps and queues, a writer waits for each chunk's due time:
// the delay is paid once per chunk in parallel, never one after another.
func (p *Proxy) pipeDelayed(dst, src net.Conn) {
	q := make(chan chunk, delayQueue)
	stop := make(chan struct{})
	go func() {
		defer close(q)
		buf := make([]byte, 32<<10)
		for {
			n, err := src.Read(buf)
			now := time.Now()
			if n > 0 {
				select {
				case q <- chunk{data: append([]byte(nil), buf[:n]...), due: now.Add(p.Delay)}:
				case <-stop:
					return
				}
			}
			if err != nil {
				if err == io.EOF {
					select {
					case q <- chunk{eof: true, due: now.Add(p.Delay)}:
					case <-stop:
					}
				}
				return
			}
		}
	}()
	defer close(stop)
	for c := range q {
		if d := time.Until(c.due); d > 0 {
			time.Sleep(d) // until this chunk is due; later ones are already queued
		}
		p.hold()
		if c.eof {
			closeWrite(dst)
			return
		}
		if _, err := dst.Write(c.data); err != nil {
			return
		}
	}
	dst.Close() // src failed: as pipe does, once what came before is delivered
}

func closeWrite(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		tc.CloseWrite()
	}
}

func itoa(n int) string {
	return strconv.Itoa(n)
}
