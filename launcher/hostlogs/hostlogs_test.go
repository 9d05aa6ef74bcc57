package hostlogs

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfhive/tfhive/launcher/supervisor/stagetest"
	"github.com/tfhive/tfhive/probe/remote"
	"github.com/tfhive/tfhive/probe/remote/remotetest"
	"github.com/tfhive/tfhive/probe/testkit"
)

const hostlogsGoldenDir = "testdata"

// Every task's output from a host (logs.sh) printed as the console does:
// what a login shell printed first is dropped, each file's lines get its
// task's prefix, a task's line that looks like a marker stays text, a
// line longer than the console's is cut.
func TestHostLogsLines(t *testing.T) {
	long := strings.Repeat("x", maxLine+10)
	in := "Welcome!\n" + logsMarker + "\n" + logMarker + "worker-0.out\n|1\n|@@tfhive-log ps-0.out\n|\n" +
		logMarker + "worker-0.err\n|oops\r\n" + logMarker + "ps-0.out\n|" + long + "\n|last"
	var out strings.Builder
	w := bufio.NewWriter(&out)
	p := &linePrinter{w: w, colors: map[string]int{}}
	found, none, err := p.copyHost(strings.NewReader(in), "gpu01")
	if !found || none != "" || err != nil {
		t.Fatalf("found %v, none %q, err %v", found, none, err)
	}
	want := "[worker:0 gpu01] 1\n[worker:0 gpu01] @@tfhive-log ps-0.out\n[worker:0 gpu01]\n[worker:0 gpu01] oops\n" +
		"[ps:0 gpu01] " + long[:maxLine-1] + "\n[ps:0 gpu01] xxxxxxxxxxx\n[ps:0 gpu01] last\n"
	if got := out.String(); got != want {
		for i, line := range strings.Split(got, "\n") {
			t.Errorf("line %d: %d bytes: %.60q", i, len(line), line)
		}
	}

	out.Reset()
	found, none, _ = p.copyHost(strings.NewReader("motd\n"+noneMarker+"no trace of run r1 in /home/u/.tfhive/runs-0123456789abcdef0123456789abcdef/r1\n"), "gpu02")
	if found || none != "no trace of run r1 in /home/u/.tfhive/runs-0123456789abcdef0123456789abcdef/r1" || out.Len() != 0 {
		t.Errorf("found %v, none %q, printed %q", found, none, out.String())
	}
}

// logsHosts answer logs.sh for run r1 as hosts may: h1 holds it (after a
// login shell's greeting), h2 does not, h3 has no connection, h4 holds it
// but fails, h5 cannot start a session.
func logsHosts(t *testing.T, task, follow string) map[string]remote.Executor {
	logs := func(out string, rc int) remote.Executor {
		return stagetest.Host(t, func(s *stagetest.Session) int {
			if s.Kind() != "logs" || s.V("tfhive_run") != "r1" || s.V("tfhive_task") != task || s.V("tfhive_follow") != follow {
				t.Errorf("logs asked %.300q", s.Stage)
			}
			s.Out(out)
			return rc
		})
	}
	return map[string]remote.Executor{
		"h1": logs("Welcome!\n"+logsMarker+"\n"+logMarker+"worker-0.out\n|step 1\n|\x1b]0;pwned\x07 \x1b[32mgreen\n"+
			logMarker+"worker-0.err\n|warn\n"+logMarker+"ps-0.out\n|serving\n", 0),
		"h2": logs(noneMarker+"no trace of run r1 in /home/u/.tfhive/runs-0123456789abcdef0123456789abcdef\n", 0),
		"h3": nil,
		"h4": logs(logsMarker+"\n"+logMarker+"worker-1.out\n|half\n", 3),
		"h5": &remotetest.Fake{},
	}
}

// Every task's output, host by host in the order asked, as the console
// shows it (coloured and sanitised on a terminal); what each host held.
func TestHostLogsEveryTask(t *testing.T) {
	order := []string{"h1", "h2", "h3", "h4", "h5"}
	for _, tty := range []bool{false, true} {
		var out, errOut bytes.Buffer
		res := Print(context.Background(), order, logsHosts(t, "", "0"),
			Options{RunID: "r1", Stdout: &out, Stderr: &errOut, TTY: tty, Color: tty, Parallel: 2})
		name := "every-task.txt"
		if tty {
			name = "every-task-tty.txt"
		}
		testkit.Golden(t, filepath.Join(hostlogsGoldenDir, name), out.Bytes())
		if errOut.Len() != 0 {
			t.Errorf("stderr %q", errOut.String())
		}
		wantHostLogs(t, res,
			"h1 found",
			"h2 none: no trace of run r1 in /home/u/.tfhive/runs-0123456789abcdef0123456789abcdef",
			"h3 error: no connection",
			"h4 found error: logs failed there (exit 3)",
			"h5 error: remotetest: no handler for command")
	}
}

// One task: its stdout and stderr as they are (sanitised on a terminal),
// from the host that holds it.
func TestHostLogsOneTask(t *testing.T) {
	task := func(h string) remote.Executor {
		return stagetest.Host(t, func(s *stagetest.Session) int {
			if s.V("tfhive_task") != "worker:0" || s.V("tfhive_follow") != "0" {
				t.Errorf("%s: asked %.300q", h, s.Stage)
			}
			if h == "h2" {
				s.Out("motd\n" + noneMarker + "no trace of task worker:0 in /home/u/.tfhive/runs-0123456789abcdef0123456789abcdef/r1\n")
				return 0
			}
			s.Out("motd\n")
			s.Markers()
			s.Out("step 1\n\x1b]52;c;eA==\x07 clip\nno newline")
			s.ErrOut("warn\n")
			return 0
		})
	}
	execs := map[string]remote.Executor{"h1": task("h1"), "h2": task("h2")}
	for _, c := range []struct {
		tty      bool
		out, err string
	}{
		{false, "step 1\n\x1b]52;c;eA==\x07 clip\nno newline", "warn\n"},
		{true, "step 1\n^[]52;c;eA==^G clip\nno newline", "warn\n"},
	} {
		var out, errOut bytes.Buffer
		res := Print(context.Background(), []string{"h1", "h2"}, execs,
			Options{RunID: "r1", Task: "worker:0", Stdout: &out, Stderr: &errOut, TTY: c.tty, Color: c.tty})
		if out.String() != c.out || errOut.String() != c.err {
			t.Errorf("tty %v: stdout %q, stderr %q; want %q, %q", c.tty, out.String(), errOut.String(), c.out, c.err)
		}
		wantHostLogs(t, res, "h1 found", "h2 none: no trace of task worker:0 in /home/u/.tfhive/runs-0123456789abcdef0123456789abcdef/r1")
	}
}

// Following a task ends when tfhive goes away: the session is dropped.
func TestHostLogsFollowEndsWithTheCaller(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h1 := stagetest.Host(t, func(s *stagetest.Session) int {
		if s.V("tfhive_follow") != "1" {
			t.Errorf("not followed: %.300q", s.Stage)
		}
		s.Markers()
		s.Out("step 1\n")
		cancel()
		return s.UntilStopped()
	})
	var out bytes.Buffer
	res := Print(ctx, []string{"h1"}, map[string]remote.Executor{"h1": h1},
		Options{RunID: "r1", Task: "worker:0", Follow: true, Stdout: &out, Stderr: io.Discard})
	if len(res) != 1 || !res[0].Found || !errors.Is(res[0].Err, context.Canceled) || out.String() != "step 1\n" {
		t.Errorf("%+v, printed %q", res, out.String())
	}
	if pr := h1.Procs(); len(pr) != 1 || pr[0].Killed() {
		t.Errorf("the session was not closed, or was killed: %v", pr)
	}
}

// Output that cannot be printed ends every host's session, and says why.
func TestHostLogsCannotPrint(t *testing.T) {
	boom := errors.New("boom")
	res := Print(context.Background(), []string{"h1", "h2"}, logsHosts(t, "", "0"),
		Options{RunID: "r1", Stdout: failingWriter{boom}, Stderr: io.Discard})
	if len(res) != 2 || !errors.Is(res[0].Err, boom) {
		t.Errorf("%+v", res)
	}
}

func wantHostLogs(t *testing.T, res []Result, want ...string) {
	t.Helper()
	var got []string
	for _, r := range res {
		s := r.Host
		if r.Found {
			s += " found"
		}
		if r.None != "" {
			s += " none: " + r.None
		}
		if r.Err != nil {
			s += " error: " + r.Err.Error()
		}
		got = append(got, s)
	}
	if len(got) != len(want) {
		t.Fatalf("hosts %q, want %q", got, want)
	}
	for i := range got {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("host %d: %q, want %q", i, got[i], want[i])
		}
	}
}

// failingWriter fails every write with err.
type failingWriter struct{ err error }

func (w failingWriter) Write([]byte) (int, error) { return 0, w.err }
