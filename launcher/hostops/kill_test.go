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
