package launcher

import (
	"context"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"

	"github.com/tfhive/tfhive/launcher/supervisor"
	"github.com/tfhive/tfhive/probe/remote"
	"github.com/tfhive/tfhive/probe/remote/remotetest"
	"github.com/tfhive/tfhive/probe/remote/shscript"
)

// end-notice.sh in a bash of its own with HOME set: the first claim of a
// run's directory is "first", every later one "told"; a run with no
// directory here is "none", and so is one whose directory is refused
// (not 0700: another user may have written there).
func TestEndNoticeScript(t *testing.T) {
	home := t.TempDir()
	const run = "20260101-000000-notify"
	say := func(text string) string {
		t.Helper()
		cmd := exec.Command("bash", "--norc", "-c", text)
		cmd.Env = []string{"HOME=" + home, "PATH=" + os.Getenv("PATH")}
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		return strings.TrimSpace(string(out))
	}
	claim := endNoticeSh.With(shscript.Set("tfhive_run", run))
	if got := say(claim); !strings.HasPrefix(got, "@@tfhive-notice none no trace of run") {
		t.Errorf("no run directory: %q", got)
	}
	rd := say(shscript.Load(supervisor.Scripts, "scripts/rundir.sh").Text() + "\ntfhive_rundir " + run + " 1 && printf '%s' \"$tfhive_rd\"")
	for i, want := range []string{"@@tfhive-notice first", "@@tfhive-notice told", "@@tfhive-notice told"} {
		if got := say(claim); got != want {
			t.Errorf("claim %d: %q, want %q", i+1, got, want)
		}
	}
	os.Remove(rd + "/end-notified")
	if err := os.Chmod(rd, 0o770); err != nil {
		t.Fatal(err)
	}
	if got := say(claim); !strings.HasPrefix(got, "@@tfhive-notice none ") || !strings.Contains(got, "not 0700") {
		t.Errorf("a group-writable run directory: %q", got)
	}
}

// ClaimEndNotice asks the hosts in order until one answers for the run:
// a host that cannot be asked, or holds nothing of the run, is passed
// over; with none that could remember, the end is told.
func TestClaimEndNotice(t *testing.T) {
	answer := func(out string) remote.Executor {
		f := &remotetest.Fake{}
		f.Reply(remotetest.Any, out, 0)
		return f
	}
	for _, c := range []struct {
		answers []remote.Executor
		want    bool
	}{
		{[]remote.Executor{&remotetest.Fake{}, answer("@@tfhive-notice none no trace\n"), answer("@@tfhive-notice told\n")}, false},
		{[]remote.Executor{answer("Welcome\n@@tfhive-notice first\n"), answer("@@tfhive-notice told\n")}, true},
		{[]remote.Executor{&remotetest.Fake{}, answer("@@tfhive-notice none no trace\n"), answer("garbage\n")}, true},
	} {
		execs := map[string]remote.Executor{}
		var hosts []string
		for i, x := range c.answers {
			h := string(rune('a' + i))
			execs[h], hosts = x, append(hosts, h)
		}
		if got := ClaimEndNotice(context.Background(), execs, append([]string{"missing"}, hosts...), "r1"); got != c.want {
			t.Errorf("%d hosts: %v, want %v", len(hosts), got, c.want)
		}
	}
}

// A host that prints without end is not kept in memory: what is kept of
// its answer is bounded, and an answer after a flood is no answer (the
// end is told rather than never).
func TestClaimEndNoticeBoundsOutput(t *testing.T) {
	const flood = 256 << 20
	chunk := make([]byte, 64<<10)
	f := &remotetest.Fake{}
	f.Handle(remotetest.Any, func(p *remotetest.Proc) int {
		for n := 0; n < flood; n += len(chunk) {
			p.Stdout.Write(chunk)
			p.Stderr.Write(chunk)
		}
		io.WriteString(p.Stdout, "\n@@tfhive-notice told\n")
		return 0
	})
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	got := ClaimEndNotice(context.Background(), map[string]remote.Executor{"a": f}, []string{"a"}, "r1")
	runtime.ReadMemStats(&after)
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 64<<20 {
		t.Errorf("a host's %d MiB of output took %d MiB", 2*flood>>20, alloc>>20)
	}
	if !got {
		t.Errorf("an answer after %d MiB of output was believed", flood>>20)
	}
}
