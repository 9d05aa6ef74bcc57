package probe

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"sync"
	"syscall"

	"golang.org/x/crypto/ssh"
)

// Started is a command started with Executor.Start.
type Started interface {
	// Stdin is the command's standard input; closing it sends EOF.
	Stdin() io.WriteCloser
	// Wait waits for the command to end and for its output to be copied.
	// The status is 128+N when it died of signal N; an error means its
	// fate is unknown (the connection to the host was lost).
	Wait() (int, error)
	// Close abandons the command: stdin is closed and the channel dropped.
	// Over SSH, Wait then returns at once (the command's fate unknown)
	// unless the command had already ended: a host whose command cannot be
	// stopped must not hold tfhive.
	Close() error
	// Kill kills the command (its process group, for the local executor)
	// and abandons it.
	Kill()
}

// Start opens a session for cmd. When sshd refuses one more session on
// this connection (MaxSessions), another connection to the same host is
// opened and used, so a host may run any number of tasks.
//
// Waiting for the exec's reply costs nothing: OpenSSH opens a session
// channel with a window of zero and grants one only once the command
// runs, together with the reply, so stdin cannot go earlier anyway.
func (c *SSHConn) Start(ctx context.Context, cmd string, stdout, stderr io.Writer) (Started, error) {
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

func (c *SSHConn) openSession(ctx context.Context) (ssh.Channel, <-chan *ssh.Request, error) {
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
		return nil, nil, fmt.Errorf("sshd refused another session and a further connection failed: %s", herr.Message)
	}
	c.extra = append(c.extra, x.client)
	return x.client.OpenChannel("session", nil)
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

// Start runs cmd with sh in its own process group.
func (LocalExec) Start(ctx context.Context, cmd string, stdout, stderr io.Writer) (Started, error) {
	c := exec.Command("sh", "-c", cmd)
	c.Stdout, c.Stderr = stdout, stderr
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, err := c.StdinPipe()
	if err != nil {
		return nil, err
	}
	if err := c.Start(); err != nil {
		return nil, err
	}
	return &localProcess{c: c, stdin: stdin}, nil
}

type localProcess struct {
	c     *exec.Cmd
	stdin io.WriteCloser
}

func (p *localProcess) Stdin() io.WriteCloser { return p.stdin }
func (p *localProcess) Close() error          { return p.stdin.Close() }

// Pid is the local command's process id (for tests that kill it).
func (p *localProcess) Pid() int { return p.c.Process.Pid }

// Kill kills the whole process group: what the command started goes too.
func (p *localProcess) Kill() {
	syscall.Kill(-p.c.Process.Pid, syscall.SIGKILL)
	p.stdin.Close()
}

func (p *localProcess) Wait() (int, error) {
	err := p.c.Wait()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal()), nil
		}
		return ee.ExitCode(), nil
	}
	if err != nil {
		return -1, err
	}
	return 0, nil
}
