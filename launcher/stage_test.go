package launcher

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

// A scripted host for the one-stage sessions tfhive starts besides a
// task's first supervisor session: attach.sh (a kept task followed
// again), find-run.sh, logs.sh, sample.sh. Each is supervisor.Command fed
// one stage: its parameters, set ahead of the script's text, say what it
// is and what it was asked.

// session is one such command, its stage read.
type session struct {
	p     *remotetest.Proc
	stage string
	in    *bufio.Reader
	// over is closed when the test ends.
	over <-chan struct{}
}

// stageHost is a host whose every supervisor.Command session is played by
// play, once its stage is in; it returns the session's status.
func stageHost(t *testing.T, play func(s *session) int) *remotetest.Fake {
	over := make(chan struct{})
	t.Cleanup(func() { close(over) })
	f := &remotetest.Fake{}
	f.Handle(remotetest.Exact(supervisor.Command), func(p *remotetest.Proc) int {
		in := bufio.NewReader(p.Stdin)
		stage, err := readOneStage(in)
		if err != nil {
			return 2
		}
		return play(&session{p: p, stage: stage, in: in, over: over})
	})
	return f
}

// readOneStage reads what read-stage.sh reads: a length line, then that many
// bytes.
func readOneStage(br *bufio.Reader) (string, error) {
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

// v is the value the stage sets name to (shscript.Set's line, quoted as
// shellescape quotes); it panics when the stage sets no such variable.
func (s *session) v(name string) string {
	for _, line := range strings.Split(s.stage, "\n") {
		if val, ok := strings.CutPrefix(line, name+"="); ok {
			if strings.HasPrefix(val, "'") {
				val = strings.ReplaceAll(strings.TrimSuffix(strings.TrimPrefix(val, "'"), "'"), `'"'"'`, "'")
			}
			return val
		}
	}
	panic(fmt.Sprintf("the stage sets no %s:\n%.300s", name, s.stage))
}

// kind is which script the session runs.
func (s *session) kind() string {
	for _, k := range []struct{ v, kind string }{
		{"tfhive_off_out=", "attach"}, {"tfhive_every=", "sample"}, {"tfhive_follow=", "logs"}, {"tfhive_run=", "find-run"},
	} {
		if strings.Contains("\n"+s.stage, "\n"+k.v) {
			return k.kind
		}
	}
	return "?"
}

func (s *session) out(text string)    { io.WriteString(s.p.Stdout, text) }
func (s *session) errOut(text string) { io.WriteString(s.p.Stderr, text) }

// markers starts both streams, as attach.sh does once it found the task.
func (s *session) markers() {
	s.out(supervisor.StreamMarker + "\n")
	s.errOut(supervisor.StreamMarker + "\n")
}

// next is the next control line but heartbeats, without its newline; ""
// at EOF.
func (s *session) next() string {
	for {
		line, err := s.in.ReadString('\n')
		if err != nil {
			return ""
		}
		if line != supervisor.CtlHeartbeat {
			return strings.TrimSuffix(line, "\n")
		}
	}
}

// stopped says, as attach.sh does from the status file, that the
// supervisor passed tfhive's stop on to the task.
func (s *session) stopped() {
	s.errOut(supervisor.StoppedMarker + s.v("tfhive_mark") + " signalled\n")
}

// untilStopped follows the task until tfhive stops it: TERM 143, KILL
// 137. At EOF the session was dropped or its link lost: over SSH its end
// is never heard of, so it does not end before the test does (Wait then
// says its fate is unknown, as remote.SSH's).
func (s *session) untilStopped() int {
	for {
		switch s.next() {
		case "t":
			s.stopped()
			return 143
		case "k":
			s.stopped()
			return 137
		case "":
			<-s.over
			return -1
		}
	}
}
