package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/tfhive/tfhive/probe/sshtest"
)

// A process of another user appears on a GPU a run holds: status shows
// the GPU as intruder with that user's pid and command (the run's own
// task, on the GPU too, is not one), and the run, sampling, says so on
// the console and in its summary.
func TestIntruderShown(t *testing.T) {
	t.Parallel() // beside others, on a fleet of its own (testing.md)
	f := sshtest.StartShared(t, sshtest.Profile{Name: "h1", GPU: "idle-2gpu.xml", AliveInterval: 1})
	h := f.Host("h1")
	mallory := sshtest.AddUser(t, "intruder")
	gdir := filepath.Join(h.Dir, "gpu")
	task := `echo $$ >"$TFHIVE_FAKE_GPU/taskpid.new" && mv "$TFHIVE_FAKE_GPU/taskpid.new" "$TFHIVE_FAKE_GPU/taskpid"; echo ready; while [ ! -e "$TFHIVE_FAKE_GPU/done" ]; do sleep 0.1; done`
	args, logDir := runArgs(t, f, "--workers", "1", "--sample", "200ms", "--", "sh", "-c", task)
	run := startTfhive(t, f, readStdout, args...)
	if !run.readUntil(func(l string) bool { return strings.HasSuffix(l, "ready") }) {
		run.Wait()
		t.Fatalf("the task did not start:\n%s%s", run.read.String(), run.other.String())
	}
	taskPID, _ := os.ReadFile(filepath.Join(gdir, "taskpid"))

	intruder := h.Command(mallory, "/bin/sleep", "100001")
	if err := intruder.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { intruder.Process.Kill(); intruder.Wait() })
	intruderPID := waitHostPID(t, h, intruder.Process.Pid)

	// The GPU the run holds, as status says.
	r := tfhive(t, f.Env(), f.Dir, fleetArgs(f, "status", "--json")...)
	wantCode(t, r, 0)
	var doc struct {
		Hosts []struct {
			GPUs []struct {
				Index     int
				State     string
				Reason    string
				Processes []struct {
					PID      int
					User     string
					Intruder bool
				}
			}
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatal(err)
	}
	gpu := -1
	for _, g := range doc.Hosts[0].GPUs {
		if g.State == "claimed" {
			gpu = g.Index
		}
	}
	if gpu < 0 {
		t.Fatalf("no GPU claimed:\n%s", r.stdout)
	}
	if err := h.ServeProcesses(gpu, atoi(strings.TrimSpace(string(taskPID))), intruderPID); err != nil {
		t.Fatal(err)
	}
	who := mallory.Name + ":" + strconv.Itoa(intruderPID) + " /bin/sleep 100001"

	r = tfhive(t, f.Env(), f.Dir, fleetArgs(f, "status")...)
	wantCode(t, r, 0)
	row := rowsOf(r.stdout, "h1")[gpu]
	if row[5] != "intruder" || !strings.Contains(row[6], who) || strings.Contains(row[6], strings.TrimSpace(string(taskPID))+" ") {
		t.Errorf("status row of GPU %d: %q, want intruder %s only", gpu, row, who)
	}
	r = tfhive(t, f.Env(), f.Dir, fleetArgs(f, "status", "--json")...)
	json.Unmarshal([]byte(r.stdout), &doc)
	g := doc.Hosts[0].GPUs[gpu]
	if g.State != "intruder" || len(g.Processes) != 2 || g.Processes[0].Intruder || !g.Processes[1].Intruder || g.Processes[1].User != mallory.Name {
		t.Errorf("status --json GPU %d: %+v", gpu, g)
	}

	// The run's sampler sees it too, while the run goes on.
	if !run.readUntil(func(l string) bool { return strings.Contains(l, "intruder on GPU") }) {
		t.Fatalf("the run did not report the intruder:\n%s", run.read.String())
	}
	wantContains(t, "console", run.read.String(), "on h1: intruder on GPU "+strconv.Itoa(gpu)+": "+who)
	if err := os.WriteFile(filepath.Join(gdir, "done"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	run.readAll()
	if err := run.Wait(); err != nil {
		t.Fatalf("run: %v\n%s%s", err, run.read.String(), run.other.String())
	}
	wantContains(t, "summary", run.read.String(), "on h1: intruder on GPU "+strconv.Itoa(gpu)+": "+who+" (first seen ")
	if strings.Count(run.read.String(), "intruder on GPU") != 2 {
		t.Errorf("want one warning and one note:\n%s", run.read.String())
	}
	s := summaryOf(t, logDir)
	if in := s.Tasks[0].Intruders; len(in) != 1 || in[0].PID != intruderPID || in[0].User != mallory.Name || in[0].GPU != gpu {
		t.Errorf("summary.json intruders: %+v", in)
	}
}
