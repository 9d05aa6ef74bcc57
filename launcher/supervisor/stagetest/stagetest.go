// Package stagetest is for tests only: a scripted host for the one-stage
// sessions tfhive starts besides a task's first supervisor session:
// attach.sh (a kept task followed again), find-run.sh, logs.sh,
// sample.sh. Each is supervisor.Command fed one stage: its parameters,
// set ahead of the script's text, say what it is and what it was asked.
package stagetest

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
	"testing"

	"github.com/tfhive/tfhive/launcher/supervisor"
	"github.com/tfhive/tfhive/probe/remote/remotetest"
)

// Session is one such command, its stage read.
type Session struct {
	P     *remotetest.Proc
	Stage string
	In    *bufio.Reader
	// Over is closed when the test ends.
	Over <-chan struct{}
}

// Host is a host whose every supervisor.Command session is played by
// play, once its stage is in; it returns the session's status.
func Host(t testing.TB, play func(s *Session) int) *remotetest.Fake {
	over := make(chan struct{})
	t.Cleanup(func() { close(over) })
	f := &remotetest.Fake{}
	f.Handle(remotetest.Exact(supervisor.Command), func(p *remotetest.Proc) int {
		in := bufio.NewReader(p.Stdin)
		stage, err := ReadOneStage(in)
		if err != nil {
			return 2
		}
		return play(&Session{P: p, Stage: stage, In: in, Over: over})
	})
	return f
}

// ReadOneStage reads what read-stage.sh reads: a length line, then that many
// bytes.
func ReadOneStage(br *bufio.Reader) (string, error) {
	line, err := br.ReadString('\n')
	if err != nil {
		return "", err
	}
	n, err := strconv.Atoi(strings.TrimSuffix(line, "\n"))
	if err != nil {
		return "", err
	}
	b := make([]byte, n)
	_, err = io.ReadFull(br, b)
	return string(b), err
}

// V is the value the stage sets name to (shscript.Set's line, quoted as
// shellescape quotes); it panics when the stage sets no such variable.
func (s *Session) V(name string) string {
	for _, line := range strings.Split(s.Stage, "\n") {
		if val, ok := strings.CutPrefix(line, name+"="); ok {
			if strings.HasPrefix(val, "'") {
				val = strings.ReplaceAll(strings.TrimSuffix(strings.TrimPrefix(val, "'"), "'"), `'"'"'`, "'")
			}
			return val
		}
	}
	panic(fmt.Sprintf("the stage sets no %s:\n%.300s", name, s.Stage))
}

// Kind is which script the session runs.
func (s *Session) Kind() string {
	for _, k := range []struct{ v, kind string }{
		{"tfhive_off_out=", "attach"}, {"tfhive_every=", "sample"}, {"tfhive_follow=", "logs"}, {"tfhive_run=", "find-run"},
	} {
		if strings.Contains("\n"+s.Stage, "\n"+k.v) {
			return k.kind
		}
	}
	return "?"
}

func (s *Session) Out(text string)    { io.WriteString(s.P.Stdout, text) }
func (s *Session) ErrOut(text string) { io.WriteString(s.P.Stderr, text) }

// Markers starts both streams, as attach.sh does once it found the task.
func (s *Session) Markers() {
	s.Out(supervisor.StreamMarker + "\n")
	s.ErrOut(supervisor.StreamMarker + "\n")
}

// Next is the next control line but heartbeats, without its newline; ""
// at EOF.
func (s *Session) Next() string {
	for {
		line, err := s.In.ReadString('\n')
		if err != nil {
			return ""
		}
		if line != supervisor.CtlHeartbeat {
			return strings.TrimSuffix(line, "\n")
		}
	}
}

// Stopped says, as attach.sh does from the status file, that the
// supervisor passed tfhive's stop on to the task.
func (s *Session) Stopped() {
	s.ErrOut(supervisor.StoppedMarker + s.V("tfhive_mark") + " signalled\n")
}

// UntilStopped follows the task until tfhive stops it: TERM 143, KILL
// 137. At EOF the session was dropped or its link lost: over SSH its end
// is never heard of, so it does not end before the test does (Wait then
// says its fate is unknown, as remote.SSH's).
func (s *Session) UntilStopped() int {
	for {
		switch s.Next() {
		case "t":
			s.Stopped()
			return 143
		case "k":
			s.Stopped()
			return 137
		case "":
			<-s.Over
			return -1
		}
	}
}
