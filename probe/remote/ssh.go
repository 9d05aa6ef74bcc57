package remote

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"

	"golang.org/x/crypto/ssh"

	"github.com/tfhive/tfhive/probe/inventory"
)

// SSH is one host's connection, opened once and reused for every command
// of the run.
type SSH struct {
	host   inventory.Host
	client *ssh.Client
	dialer Dialer

	mu sync.Mutex
	// extra are further connections opened only when sshd refused another
	// session on the existing ones (MaxSessions, 10 by default).
	extra []*ssh.Client
}

// Dialer opens SSH connections; *transport.Dialer is the real one.
type Dialer interface {
	Dial(ctx context.Context, h inventory.Host) (*ssh.Client, *inventory.HostError)
}

// Dial connects to h with d; d also opens the further connections the
// executor may need.
func Dial(ctx context.Context, d Dialer, h inventory.Host) (*SSH, *inventory.HostError) {
	c, herr := d.Dial(ctx, h)
	if herr != nil {
		return nil, herr
	}
	return &SSH{host: h, client: c, dialer: d}, nil
}

// Client exposes the connection for callers that need more than Run.
func (c *SSH) Client() *ssh.Client { return c.client }

func (c *SSH) Close() error {
	c.mu.Lock()
	for _, x := range c.extra {
		x.Close()
	}
	c.extra = nil
	c.mu.Unlock()
	return c.client.Close()
}

func (c *SSH) Run(ctx context.Context, cmd string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	return Run(ctx, c, cmd, stdin, stdout, stderr)
}

// Start opens a session for cmd. When sshd refuses one more session on
// this connection (MaxSessions), another connection to the same host is
// opened and used, so a host may run any number of tasks.
//
// Waiting for the exec's reply costs nothing: OpenSSH opens a session
// channel with a window of zero and grants one only once the command
// runs, together with the reply, so stdin cannot go earlier anyway.
func (c *SSH) Start(ctx context.Context, cmd string, stdout, stderr io.Writer) (Started, error) {
	ch, reqs, err := c.openSession(ctx)
	if err != nil {
		return nil, err
	}
	p := &sshProcess{ch: ch, exited: make(chan struct{}), dropped: make(chan struct{})}
	go p.requests(reqs)
	ok, err := ch.SendRequest("exec", true, ssh.Marshal(struct{ Command string }{cmd}))
	if err == nil && !ok {
		err = errors.New("sshd refused to run the command")
	}
	if err != nil {
		ch.Close()
		return nil, fmt.Errorf("ssh: start: %w", err)
	}
	p.copies.Add(2)
	go p.copy(stdout, ch, stdoutBuf)
	go p.copy(stderr, ch.Stderr(), stderrBuf)
	return p, nil
}

// Copy buffers per stream. x/crypto's Session copies with io.Copy's
// 32 KiB buffers, two per command, held for the command's life: 32 MiB at
// 512 tasks. A read takes what has arrived, up to the buffer, so smaller
// buffers only mean more reads (the streaming benchmark shows the cost).
const (
	stdoutBuf = 4 << 10
	stderrBuf = 1 << 10
)

func (c *SSH) openSession(ctx context.Context) (ssh.Channel, <-chan *ssh.Request, error) {
	ch, reqs, err := c.client.OpenChannel("session", nil)
	if err == nil || !refusedSession(err) {
		return ch, reqs, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, x := range c.extra {
		if ch, reqs, err := x.OpenChannel("session", nil); err == nil || !refusedSession(err) {
			return ch, reqs, err
		}
	}
	if c.dialer == nil {
		return nil, nil, err
	}
	x, herr := c.dialer.Dial(ctx, c.host)
	if herr != nil {
		return nil, nil, fmt.Errorf("sshd refused another session and a further connection failed: %w", herr)
	}
	c.extra = append(c.extra, x)
	return x.OpenChannel("session", nil)
}

// refusedSession is sshd refusing a session channel. A session connects to
// nothing, so a refusal means a limit: OpenSSH answers "connect failed:
// open failed" once MaxSessions (10 by default) are open.
func refusedSession(err error) bool {
	var oce *ssh.OpenChannelError
	return errors.As(err, &oce) && (oce.Reason == ssh.Prohibited || oce.Reason == ssh.ConnectionFailed)
}

type sshProcess struct {
	ch      ssh.Channel
	copies  sync.WaitGroup
	exited  chan struct{} // closed when the channel is, rc and err set
	rc      int
	err     error
	dropped chan struct{} // closed by Close
	drop    sync.Once

	// in serialises writes and EOF on the channel: x/crypto keeps one
	// packet buffer per stream and an unguarded EOF flag, so concurrent
	// Write and CloseWrite race.
	in sync.Mutex

	mu        sync.Mutex // guards the rest, and output writes
	copyErr   error
	abandoned bool // Wait returned early: output goes nowhere now
}

func (p *sshProcess) Stdin() io.WriteCloser { return stdinOf{p} }

// stdinOf is the channel's write side; Close sends EOF.
type stdinOf struct{ p *sshProcess }

func (s stdinOf) Write(b []byte) (int, error) {
	s.p.in.Lock()
	defer s.p.in.Unlock()
	return s.p.ch.Write(b)
}

func (s stdinOf) Close() error {
	s.p.in.Lock()
	defer s.p.in.Unlock()
	return s.p.ch.CloseWrite()
}

// copy copies one stream to w. When w fails, the rest is still read and
// dropped: an unread channel would stop the remote command once its
// window is full.
func (p *sshProcess) copy(w io.Writer, r io.Reader, size int) {
	defer p.copies.Done()
	if w == nil {
		w = io.Discard
	}
	buf := make([]byte, size)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			p.mu.Lock()
			if !p.abandoned && p.copyErr == nil {
				if _, werr := w.Write(buf[:n]); werr != nil {
					p.copyErr = werr
				}
			}
			p.mu.Unlock()
		}
		if err != nil {
			return
		}
	}
}

// requests reads the channel's requests until it closes: the exit status
// or signal, and keepalives (answered no, as OpenSSH's client does).
func (p *sshProcess) requests(reqs <-chan *ssh.Request) {
	rc, signal := -1, ""
	for req := range reqs {
		switch req.Type {
		case "exit-status":
			if len(req.Payload) >= 4 {
				rc = int(binary.BigEndian.Uint32(req.Payload))
			}
		case "exit-signal":
			var sig struct {
				Signal     string
				CoreDumped bool
				Error      string
				Lang       string
			}
			if ssh.Unmarshal(req.Payload, &sig) == nil {
				signal = sig.Signal
			}
		default:
			if req.WantReply {
				req.Reply(false, nil)
			}
		}
	}
	switch {
	case rc >= 0:
		p.rc = rc
	case signal != "":
		p.rc = 128 + signalNumber(signal)
	default:
		p.rc, p.err = -1, errors.New("connection lost before the command finished")
	}
	close(p.exited)
}

// Kill asks sshd to kill the command, then drops the channel whatever it
// says (older servers ignore signal requests).
func (p *sshProcess) Kill() {
	_, _ = p.ch.SendRequest("signal", false, ssh.Marshal(struct{ Signal string }{string(ssh.SIGKILL)}))
	p.Close()
}

func (p *sshProcess) Close() error {
	p.drop.Do(func() { close(p.dropped) })
	// A writer blocked on a full window holds the lock; the channel close
	// below ends the command's stdin as well, so EOF is only a courtesy.
	if p.in.TryLock() {
		p.ch.CloseWrite()
		p.in.Unlock()
	}
	return p.ch.Close()
}

// Wait waits for the channel to close and its output to be copied, or
// for Close: sshd confirms a closed session channel only once the
// command has exited, which a hung command (or, as root, one that sshd
// may not signal) never does.
func (p *sshProcess) Wait() (int, error) {
	select {
	case <-p.exited:
		p.copies.Wait()
	case <-p.dropped:
		select {
		case <-p.exited:
			p.copies.Wait()
		default:
			p.mu.Lock()
			p.abandoned = true
			p.mu.Unlock()
			return -1, errors.New("abandoned before the command finished")
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err == nil && p.copyErr != nil {
		return -1, p.copyErr
	}
	return p.rc, p.err
}

var signalNumbers = map[ssh.Signal]int{
	ssh.SIGABRT: 6, ssh.SIGALRM: 14, ssh.SIGFPE: 8, ssh.SIGHUP: 1, ssh.SIGILL: 4, ssh.SIGINT: 2,
	ssh.SIGKILL: 9, ssh.SIGPIPE: 13, ssh.SIGQUIT: 3, ssh.SIGSEGV: 11, ssh.SIGTERM: 15, ssh.SIGUSR1: 10, ssh.SIGUSR2: 12,
}

func signalNumber(name string) int {
	if n, ok := signalNumbers[ssh.Signal(name)]; ok {
		return n
	}
	return 0
}
