// Package remote runs commands on the fleet's hosts: the Executor
// interface, its SSH implementation (sessions over the host's one
// connection, more connections only when sshd refuses another session),
// the local one for the no-hosts default, the pool of spare sessions
// a probe leaves running for the launcher to take (Spares), and the
// bounded writer every caller that holds a host's answer whole reads it
// with (Bounded, RunBounded). remotetest holds a scripted Executor for
// other packages' tests.
//
// It knows nothing of what the commands are, nor of how connections are
// opened (the transport hands them in): it must not import the probe, the
// planner, the launcher, probe/transport or probe/hosts. Of tfhive it
// imports probe/inventory only.
package remote

import (
	"context"
	"io"
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

// Starter is the half of an Executor that Run is built on.
type Starter interface {
	Start(ctx context.Context, cmd string, stdout, stderr io.Writer) (Started, error)
}

// Run is Executor.Run for any Starter: Start, feed stdin, Wait; ctx kills
// the command. Executors implement their Run with it.
func Run(ctx context.Context, s Starter, cmd string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	p, err := s.Start(ctx, cmd, stdout, stderr)
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
