// Package remotetest is a scripted remote.Executor for tests that need a
// host without one: commands are answered by Go functions that play them
// (read stdin, write output, return a status), in process, so a test of
// what runs commands needs no sshd and no shell.
//
// It must not import anything of tfhive but probe/remote.
package remotetest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/tfhive/tfhive/probe/remote"
)

// Fake is a scripted host. Each command goes to the first handler, in the
// order they were added, whose match accepts it; a command none accepts
// fails to start. Its started commands behave as over SSH: Close and Kill
// abandon a command that has not ended (Wait returns an error at once),
// and output written after that goes nowhere. The zero value is a host
// that accepts no command.
type Fake struct {
	mu       sync.Mutex
	handlers []handler
	cmds     []string
	procs    []*Proc
	down     error // why Start fails: Lose or Close
}

type handler struct {
	match func(cmd string) bool
	run   func(p *Proc) int
}

var _ remote.Executor = (*Fake)(nil)

// Handle sends the commands match accepts to run, which plays each in a
// goroutine of its own and returns its exit status (128+N for signal N).
// run should return once p.Stopped() is closed: the caller has given the
// command up.
func (f *Fake) Handle(match func(cmd string) bool, run func(p *Proc) int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.handlers = append(f.handlers, handler{match, run})
}

// Reply answers the commands match accepts with stdout and status, without
// reading their stdin.
func (f *Fake) Reply(match func(cmd string) bool, stdout string, status int) {
	f.Handle(match, func(p *Proc) int {
		io.WriteString(p.Stdout, stdout)
		return status
	})
}

// Prefix, Contains and Exact are matchers for Handle and Reply.
func Prefix(s string) func(string) bool {
	return func(cmd string) bool { return strings.HasPrefix(cmd, s) }
}
func Contains(s string) func(string) bool {
	return func(cmd string) bool { return strings.Contains(cmd, s) }
}
func Exact(s string) func(string) bool { return func(cmd string) bool { return cmd == s } }

// Any matches every command.
func Any(string) bool { return true }

// Commands are the commands started so far (by Run or Start), in order,
// including those no handler accepted.
func (f *Fake) Commands() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.cmds...)
}

// Procs are the commands started so far that a handler plays, in order.
func (f *Fake) Procs() []*Proc {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*Proc(nil), f.procs...)
}

// ErrLost is what Wait returns for a command whose host was lost, and
// Start once it is.
var ErrLost = errors.New("connection lost before the command finished")

// errAbandoned is Wait's error for a command closed or killed before it
// ended, as remote.SSH's.
var errAbandoned = errors.New("abandoned before the command finished")

// Lose makes the host unreachable, as a dropped SSH connection does: the
// commands running end with ErrLost (their fate unknown) and Start fails.
func (f *Fake) Lose() { f.stop(ErrLost) }

// Close closes the host's connection: what runs is lost.
func (f *Fake) Close() error {
	f.stop(errors.New("remotetest: the connection is closed"))
	return nil
}

func (f *Fake) stop(why error) {
	f.mu.Lock()
	if f.down == nil {
		f.down = why
	}
	procs := f.procs
	f.mu.Unlock()
	for _, p := range procs {
		p.end(endLost)
	}
}

func (f *Fake) Run(ctx context.Context, cmd string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	return remote.Run(ctx, f, cmd, stdin, stdout, stderr)
}

func (f *Fake) Start(ctx context.Context, cmd string, stdout, stderr io.Writer) (remote.Started, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f.mu.Lock()
	f.cmds = append(f.cmds, cmd)
	if f.down != nil {
		err := f.down
		f.mu.Unlock()
		return nil, err
	}
	var run func(*Proc) int
	for _, h := range f.handlers {
		if h.match(cmd) {
			run = h.run
			break
		}
	}
	if run == nil {
		f.mu.Unlock()
		return nil, fmt.Errorf("remotetest: no handler for command %q", cmd)
	}
	p := newProc(cmd, stdout, stderr)
	f.procs = append(f.procs, p)
	f.mu.Unlock()
	go func() {
		rc := run(p)
		p.mu.Lock()
		p.rc = rc
		p.exited = p.ending == running
		p.mu.Unlock()
		close(p.done)
	}()
	return started{p}, nil
}
