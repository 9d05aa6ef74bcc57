package probe

import (
	"context"
	"io"
	"sync"

	"golang.org/x/crypto/ssh"

	"github.com/tfhive/tfhive/probe/inventory"
)

// Executor runs commands on one host: over the host's single SSH connection,
// or directly on this machine for the no-hosts default.
type Executor interface {
	// Run runs cmd with the host's login shell (sh for the local executor),
	// feeding stdin, and returns the exit status (128+N for signal N). An
	// error means the command's fate is unknown (connection lost, ctx done).
	Run(ctx context.Context, cmd string, stdin io.Reader, stdout, stderr io.Writer) (int, error)
	// Start starts cmd like Run but returns at once; output is copied to
	// stdout and stderr until the command ends.
	Start(ctx context.Context, cmd string, stdout, stderr io.Writer) (Started, error)
	Close() error
}

// SSHConn is one host's connection, opened once and reused for every
// command of the run.
type SSHConn struct {
	host   inventory.Host
	client *ssh.Client
	dialer *Dialer

	mu sync.Mutex
	// extra are further connections opened only when sshd refused another
	// session on the existing ones (MaxSessions, 10 by default).
	extra []*ssh.Client
}

// Client exposes the connection for callers that need more than Run.
func (c *SSHConn) Client() *ssh.Client { return c.client }

func (c *SSHConn) Close() error {
	c.mu.Lock()
	for _, x := range c.extra {
		x.Close()
	}
	c.extra = nil
	c.mu.Unlock()
	return c.client.Close()
}

func (c *SSHConn) Run(ctx context.Context, cmd string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	return run(ctx, c, cmd, stdin, stdout, stderr)
}

// LocalExec runs commands on this machine with sh, for the localhost
// default; it behaves like an SSH host to everything above it.
type LocalExec struct{}

func (LocalExec) Close() error { return nil }

func (l LocalExec) Run(ctx context.Context, cmd string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	return run(ctx, l, cmd, stdin, stdout, stderr)
}

// run is Run for any executor: Start, feed stdin, Wait; ctx kills it.
func run(ctx context.Context, e Executor, cmd string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	p, err := e.Start(ctx, cmd, stdout, stderr)
	if err != nil {
		return -1, err
	}
	go func() {
		if stdin != nil {
			io.Copy(p.Stdin(), stdin)
		}
		p.Stdin().Close()
	}()
	type result struct {
		rc  int
		err error
	}
	done := make(chan result, 1)
	go func() {
		rc, err := p.Wait()
		done <- result{rc, err}
	}()
	select {
	case r := <-done:
		return r.rc, r.err
	case <-ctx.Done():
		p.Kill()
		return -1, ctx.Err()
	}
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
