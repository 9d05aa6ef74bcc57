package remote

import (
	"context"
	"errors"
	"io"
	"os/exec"
	"syscall"
)

// Local runs commands on this machine with sh, for the localhost default;
// it behaves like an SSH host to everything above it.
type Local struct{}

func (Local) Close() error { return nil }

func (l Local) Run(ctx context.Context, cmd string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	return Run(ctx, l, cmd, stdin, stdout, stderr)
}

// Start runs cmd with sh in its own process group.
func (Local) Start(ctx context.Context, cmd string, stdout, stderr io.Writer) (Started, error) {
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
