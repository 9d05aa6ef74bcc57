package hostops

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tfhive/tfhive/launcher/view"
	"github.com/tfhive/tfhive/probe/remote"
	"github.com/tfhive/tfhive/probe/remote/remotetest"
)

// kill runs kill.sh on each host where the run holds claims, with the run,
// its holders and the grace; it reports what each host stopped or why not,
// a refusal as a refusal.
func TestKill(t *testing.T) {
	sh := func(out, errOut string, rc int) remote.Executor {
		f := &remotetest.Fake{}
		f.Handle(remotetest.Exact("sh -s"), func(p *remotetest.Proc) int {
			b, _ := io.ReadAll(p.Stdin)
			if s := string(b); !strings.Contains(s, "run=r1\n") || !strings.Contains(s, "holders=10,11\n") || !strings.Contains(s, "tenths=25\n") {
				t.Errorf("kill.sh's parameters: %.200q", s)
			}
			io.WriteString(p.Stdout, out)
			io.WriteString(p.Stderr, errOut)
			return rc
		})
		return f
	}
	lost := &remotetest.Fake{}
	lost.Lose()
	execs := map[string]remote.Executor{
		"h1":   sh("signalled 12\nstopped 2\n", "", 0),
		"h3":   sh("stopped 0\n", "", 3),
		"h4":   sh("stopped 1\n", "tfhive: kill 14: Operation not permitted\n", 1),
		"h5":   lost,
		"h6":   sh("", "", 0),
		"odd":  sh("", "", 0),
		"none": sh("", "", 0),
	}
	run := func(host string) view.RunOnHost {
		return view.RunOnHost{RunID: "r1", Host: host, Holders: []int{10, 11}}
	}
	runs := []view.RunOnHost{run("h1"), run("h2"), run("h3"), run("h4"), run("h5"),
		{RunID: "r1", Host: "h6"},                             // no holders yet
		{RunID: "../r1", Host: "odd", Holders: []int{10, 11}}, // not a run id tfhive makes
		{Host: "none", Holders: []int{10}}}                    // an unseen holder's
	res := Kill(context.Background(), runs, execs, 2500*time.Millisecond, 3)
	var got []string
	for _, r := range res {
		s := fmt.Sprintf("%s %d", r.Host, r.Tasks)
		if r.Err != nil {
			s += ": " + r.Err.Error()
		}
		got = append(got, s)
	}
	const starting = "its tasks are still starting; try again in a moment"
	want := []string{"h1 2", "h2 0: no connection", "h3 0: its tasks are still starting or already gone; try again in a moment",
		"h4 1: kill 14: Operation not permitted", "h5 0: " + remotetest.ErrLost.Error(),
		"h6 0: " + starting, "odd 0: " + starting, "none 0: " + starting}
	if !slices.Equal(got, want) {
		t.Errorf("results\n %q\nwant\n %q", got, want)
	}
}

// A host whose answer passes its bound is stopped there, and nothing of
// it is believed: kill does not count its tasks as stopped, gc does not
// say what it removed there; reserve reads its stderr within a bound.
func TestHostAnswerPastItsBound(t *testing.T) {
	flood := func(on func(p *remotetest.Proc) io.Writer) *remotetest.Fake {
		f := &remotetest.Fake{}
		f.Handle(remotetest.Any, func(p *remotetest.Proc) int {
			io.WriteString(p.Stdout, "stopped 2\n")
			if p.Flood(on(p), 64<<20) < 0 {
				t.Error("the flooding host was not stopped")
			}
			return 0
		})
		return f
	}
	stdout := func(p *remotetest.Proc) io.Writer { return p.Stdout }
	res := Kill(context.Background(), []view.RunOnHost{{RunID: "r1", Host: "h1", Holders: []int{10}}},
		map[string]remote.Executor{"h1": flood(stdout)}, time.Second, 1)
	if want := "its answer passed 64 KiB: which of its tasks stopped is unknown"; res[0].Err == nil || res[0].Err.Error() != want || res[0].Tasks != 0 {
		t.Errorf("kill: %d, %v; want 0, %q", res[0].Tasks, res[0].Err, want)
	}

	_, err := GCRuns(context.Background(), flood(stdout), time.Hour, false)
	if want := "its answer passed 4 MiB: which ended runs' files it removed is unknown"; err == nil || err.Error() != want {
		t.Errorf("gc: %v, want %q", err, want)
	}

	noisy := &remotetest.Fake{}
	noisy.Handle(remotetest.Any, func(p *remotetest.Proc) int {
		io.ReadAll(p.Stdin)
		io.WriteString(p.Stdout, strings.Repeat("x", 1<<20))
		io.WriteString(p.Stderr, "tfhive: cannot make it\n"+strings.Repeat("e", 1<<20))
		return 1
	})
	err = Reserve(context.Background(), noisy, "tfhive-reservation.x", nil)
	if err == nil || len(err.Error()) > maxStderr {
		t.Errorf("reserve: %.100v", err)
	}
}
