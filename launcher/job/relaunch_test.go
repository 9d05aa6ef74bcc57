package job

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/tfhive/tfhive/launcher"
	"github.com/tfhive/tfhive/launcher/lifecycle"
	"github.com/tfhive/tfhive/launcher/record"
	"github.com/tfhive/tfhive/launcher/rundir"
	"github.com/tfhive/tfhive/probe/hosttest"
	"github.com/tfhive/tfhive/probe/inventory"
	"github.com/tfhive/tfhive/schedule"
)

// relaunch plans again, without each lost host, until a run does not end
// on a lost host, the restarts are spent, or the rest does not fit.
func TestRelaunch(t *testing.T) {
	rs := lifecycle.Restart{Max: 2}
	for _, c := range []struct {
		name   string
		starts []func() (*record.Summary, error)
		want   string // the final summary's result and exit code
		lines  []string
		left   string // the hosts left out of the fleet
	}{
		{"fits", []func() (*record.Summary, error){
			func() (*record.Summary, error) { return &record.Summary{Result: record.ResultSucceeded}, nil },
		}, "succeeded 0", []string{"tfhive: lost a; re-planning without it and restarting every task in 0s (attempt 2 of 3)"}, "a"},
		{"lost again, then out of restarts", []func() (*record.Summary, error){
			func() (*record.Summary, error) { return lostRun("b", 1), nil },
			func() (*record.Summary, error) { return lostRun("c", 2), nil },
		}, "failed 4", []string{"(attempt 2 of 3)", "tfhive: lost b; re-planning without it and restarting every task in 0s (attempt 3 of 3)"}, "a,b"},
		{"does not fit", []func() (*record.Summary, error){
			func() (*record.Summary, error) {
				return nil, &schedule.CapacityError{Msg: "not enough free GPUs: asked 4 (2 workers × 2), found 2\nmore"}
			},
		}, "failed 4", []string{"tfhive: re-plan without a did not fit: not enough free GPUs: asked 4 (2 workers × 2), found 2"}, "a"},
		{"fails otherwise", []func() (*record.Summary, error){
			func() (*record.Summary, error) { return nil, errors.New("log dir: disk full") },
		}, "failed 4", []string{"tfhive: re-plan without a failed: log dir: disk full"}, "a"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newTestFleet(t, hosttest.Profile{Name: "a", GPUs: 1}, hosttest.Profile{Name: "b", GPUs: 1}, hosttest.Profile{Name: "c", GPUs: 1})
			j := newTestJob(t, f, "r", 1)
			j.spec.Engine.Restart = rs
			lo := j.spec.Engine
			summaryFile := filepath.Join(lo.LogDir, rundir.Summary)
			os.WriteFile(summaryFile, []byte("the first start's"), 0o644)
			n, failed := 0, false
			start := func(_ context.Context, lo launcher.Options) (*record.Summary, error) {
				if n >= len(c.starts) {
					t.Fatalf("started %d times", n+1)
				}
				n++
				if lo.Relaunch == nil {
					t.Error("relaunched without its carry")
				}
				if _, err := os.Stat(summaryFile); err == nil {
					t.Error("the failed start's summary.json is still there while the run goes on")
				}
				s, err := c.starts[n-1]()
				failed = err != nil
				return s, err
			}
			r := newRun(j.spec, Hooks{Start: start})
			sum := r.relaunch(context.Background(), lostRun("a", 0), Retry{})
			lo.Console.Close()
			console := j.console
			if got := sum.Result + " " + strconv.Itoa(sum.ExitCode); got != c.want {
				t.Errorf("result %s, want %s", got, c.want)
			}
			for _, l := range c.lines {
				if !strings.Contains(console.String(), l) {
					t.Errorf("console lacks %q:\n%s", l, console.String())
				}
			}
			// A re-plan that failed leaves the last start's summary.
			if data, err := os.ReadFile(summaryFile); failed && (err != nil || !strings.Contains(string(data), `"exit_code": 4`)) {
				t.Errorf("summary.json %q, %v", data, err)
			}
			var left []string
			for _, h := range f.f.Probe(context.Background()).Hosts {
				if h.Err != nil && h.Err.Kind == inventory.ErrLost {
					left = append(left, h.Name)
				}
			}
			if strings.Join(left, ",") != c.left {
				t.Errorf("left out %v, want %s", left, c.left)
			}
		})
	}
}

// A re-plan keeps off every port an earlier plan of the run gave, on the
// host it gave it: each task's, and a torch world's MASTER_PORT on rank
// 0's host. An old attempt still running on a host that was only cut off
// then cannot meet the new one.
func TestPlanPortsAvoided(t *testing.T) {
	used := map[string][]int{}
	planPorts(&schedule.Plan{Tasks: []schedule.Task{
		{ID: "ps:0", Host: "a", Port: 2222},
		{ID: "worker:0", Host: "b", Port: 2223},
	}}, used)
	planPorts(&schedule.Plan{Master: "10.0.0.1:2300", Tasks: []schedule.Task{
		{ID: "worker:0", Host: "c", Env: map[string]string{"RANK": "0"}},
		{ID: "worker:1", Host: "a", Env: map[string]string{"RANK": "1"}},
	}}, used)
	want := map[string][]int{"a": {2222}, "b": {2223}, "c": {2300}}
	if len(used) != len(want) {
		t.Fatalf("used %v, want %v", used, want)
	}
	for h, ports := range want {
		if !slices.Equal(used[h], ports) {
			t.Errorf("%s: %v, want %v", h, used[h], ports)
		}
	}
	// What the planner then does with them: a port listed as listening
	// is never given.
	inv := inventory.Inventory{Hosts: []inventory.HostInventory{{Name: "a", ListeningPorts: used["a"],
		GPUs: []inventory.GPU{{Index: 0, UUID: "GPU-a0"}}}}}
	req := schedule.NewRequest()
	req.GPUsPerWorker, req.RunID, req.Command = 0, "r", []string{"true"}
	plan, err := schedule.Make(inv, req)
	if err != nil {
		t.Fatal(err)
	}
	if plan.Tasks[0].Port == 2222 {
		t.Errorf("the re-plan gave port 2222 again")
	}
}
