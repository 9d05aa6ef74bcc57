package remotetest_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/tfhive/tfhive/probe/remote/remotetest"
)

func TestFakeRunReplies(t *testing.T) {
	var f remotetest.Fake
	f.Reply(remotetest.Prefix("hostname"), "gpu01\n", 0)
	f.Reply(remotetest.Any, "", 127)
	ctx := context.Background()
	var out bytes.Buffer
	if rc, err := f.Run(ctx, "hostname -s", nil, &out, nil); rc != 0 || err != nil || out.String() != "gpu01\n" {
		t.Errorf("hostname: rc %d, err %v, output %q", rc, err, out.String())
	}
	if rc, err := f.Run(ctx, "nvidia-smi", nil, nil, nil); rc != 127 || err != nil {
		t.Errorf("fallback: rc %d, err %v", rc, err)
	}
	if got, want := f.Commands(), []string{"hostname -s", "nvidia-smi"}; !slices.Equal(got, want) {
		t.Errorf("commands %q, want %q", got, want)
	}
}

func TestFakeUnmatchedCommandFailsToStart(t *testing.T) {
	var f remotetest.Fake
	f.Reply(remotetest.Exact("true"), "", 0)
	if _, err := f.Start(context.Background(), "false", nil, nil); err == nil {
		t.Error("a command no handler accepts started")
	}
}

// A started command reads what the caller writes, line by line, and
// answers on stdout and stderr; closing stdin ends it.
func TestFakeStartedCommandTalks(t *testing.T) {
	var f remotetest.Fake
	f.Handle(remotetest.Contains("supervise"), func(p *remotetest.Proc) int {
		in := bufio.NewScanner(p.Stdin)
		n := 0
		for in.Scan() {
			n++
			fmt.Fprintf(p.Stdout, "got %s\n", in.Text())
		}
		fmt.Fprintf(p.Stderr, "%d lines\n", n)
		return 3
	})
	var out, errb bytes.Buffer
	p, err := f.Start(context.Background(), "exec supervise", &out, &errb)
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(p.Stdin(), "a\nb\n")
	p.Stdin().Close()
	if rc, err := p.Wait(); rc != 3 || err != nil {
		t.Fatalf("rc %d, err %v", rc, err)
	}
	if out.String() != "got a\ngot b\n" || errb.String() != "2 lines\n" {
		t.Errorf("stdout %q, stderr %q", out.String(), errb.String())
	}
	if procs := f.Procs(); len(procs) != 1 || procs[0].Cmd != "exec supervise" {
		t.Errorf("procs %v", procs)
	}
}

// Kill and Close give a command up as over SSH: Wait returns at once with
// an error, the handler is told, and its later output goes nowhere.
func TestFakeKillAbandons(t *testing.T) {
	for _, kill := range []bool{true, false} {
		var f remotetest.Fake
		wrote, late := make(chan struct{}), make(chan struct{})
		f.Handle(remotetest.Any, func(p *remotetest.Proc) int {
			io.WriteString(p.Stdout, "early\n")
			close(wrote)
			<-p.Stopped()
			<-late
			io.WriteString(p.Stdout, "late\n")
			return 0
		})
		var out bytes.Buffer
		p, err := f.Start(context.Background(), "hang", &out, nil)
		if err != nil {
			t.Fatal(err)
		}
		<-wrote
		if kill {
			p.Kill()
		} else {
			p.Close()
		}
		if rc, err := p.Wait(); err == nil || !strings.Contains(err.Error(), "abandoned") {
			t.Errorf("kill %v: Wait = %d, %v; want abandoned", kill, rc, err)
		}
		proc := f.Procs()[0]
		if proc.Killed() != kill {
			t.Errorf("Killed() = %v after kill %v", proc.Killed(), kill)
		}
		close(late)
		<-proc.Done()
		if got := out.String(); got != "early\n" {
			t.Errorf("kill %v: output %q, want only what came before", kill, got)
		}
	}
}

// A lost host ends what runs with ErrLost and refuses new commands;
// a command lost is lost even once its handler has returned, however
// late Wait is asked (it once said exit 0 when both had come).
func TestFakeLose(t *testing.T) {
	for _, late := range []bool{false, true} {
		var f remotetest.Fake
		f.Handle(remotetest.Any, func(p *remotetest.Proc) int { <-p.Stopped(); return 0 })
		p, err := f.Start(context.Background(), "sleep", nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		f.Lose()
		if late {
			<-f.Procs()[0].Done()
		}
		if rc, err := p.Wait(); !errors.Is(err, remotetest.ErrLost) {
			t.Errorf("Wait after Lose (handler returned first: %v): %d, %v, want ErrLost", late, rc, err)
		}
		if _, err := f.Start(context.Background(), "sleep", nil, nil); !errors.Is(err, remotetest.ErrLost) {
			t.Errorf("Start after Lose: %v, want ErrLost", err)
		}
	}
}

// Run gives a command up when its context ends.
func TestFakeRunHonoursContext(t *testing.T) {
	var f remotetest.Fake
	ctx, cancel := context.WithCancel(context.Background())
	f.Handle(remotetest.Any, func(p *remotetest.Proc) int { cancel(); <-p.Stopped(); return 0 })
	if _, err := f.Run(ctx, "hang", nil, nil, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("Run: %v, want context.Canceled", err)
	}
	if !f.Procs()[0].Killed() {
		t.Error("the command was not killed")
	}
}
