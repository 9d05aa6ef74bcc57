package e2e

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/tfhive/tfhive/launcher/view"
	"github.com/tfhive/tfhive/probe/sshtest"
	"github.com/tfhive/tfhive/schedule"
)

// gotLine is what a task of the MIG test prints of its environment.
var gotLine = regexp.MustCompile(`\] GOT (\S+) (\S*)$`)

// migDevices are the CUDA_VISIBLE_DEVICES the tasks of a run's output
// said they saw, by task.
func migDevices(out string) map[string]string {
	got := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		if m := gotLine.FindStringSubmatch(line); m != nil {
			got[m[1]] = m[2]
		}
	}
	return got
}

// A host whose GPU is in MIG mode, serving the real A100 capture (four
// 1g.20gb MIG devices; nvidia-smi -L's UUIDs from the fake): status lists
// the instances as free beside their GPU, plan and run give one instance
// per task as CUDA_VISIBLE_DEVICES=MIG-…, two runs never share one, top
// shows whose each is, and a task of 2 GPUs is refused the instances.
func TestMIGInstances(t *testing.T) {
	f := sshtest.Start(t, sshtest.Profile{Name: "gpu-mig", GPU: "mig-a100-real.xml", AliveInterval: 1})

	// status: the GPU, excluded as a whole, and its four instances.
	r := tfhive(t, f.Env(), f.Dir, fleetArgs(f, "status")...)
	wantCode(t, r, 0)
	rows := rowsOf(r.stdout, "gpu-mig")
	if len(rows) != 5 {
		t.Fatalf("want the GPU and its 4 MIG instances, got %v\n%s", rows, r.stdout)
	}
	if rows[0][1] != "0" || rows[0][5] != "excluded" || rows[0][6] != "MIG enabled: used as its MIG instances 1,2,3,4" {
		t.Errorf("GPU 0's row: %q", rows[0])
	}
	for i, row := range rows[1:] {
		if row[1] != itoa(i+1) || row[2] != "MIG 1g.20gb of GPU 0" || row[3] != "12/19968 MiB" || row[5] != "free" {
			t.Errorf("instance row %q: want GPU %d, MIG 1g.20gb of GPU 0, its own memory, free", row, i+1)
		}
	}
	// One nvidia-smi -q -x and one -L, in the same probe.
	if n := f.Host("gpu-mig").SMICalls(); n != 2 {
		t.Errorf("nvidia-smi ran %d times, want 2 (-q -x, -L)", n)
	}

	r = tfhive(t, f.Env(), f.Dir, fleetArgs(f, "status", "--json")...)
	wantCode(t, r, 0)
	var doc view.StatusDocument
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatal(err)
	}
	var uuids []string // the instances', in index order
	for _, g := range doc.Hosts[0].GPUs[1:] {
		if g.MIGInstance == nil || g.MIGInstance.Parent != 0 || !strings.HasPrefix(g.UUID, "MIG-") || g.State != schedule.Free {
			t.Errorf("instance %d in --json: %+v", g.Index, g)
		}
		uuids = append(uuids, g.UUID)
	}

	// plan: one instance per task, named by its UUID.
	r = tfhive(t, f.Env(), f.Dir, fleetArgs(f, "plan", "--workers", "2", "--gpus-per-worker", "1", "--json", "--", "python", "train.py", "--gpus", "{gpus}")...)
	wantCode(t, r, 0)
	var plan schedule.Plan
	if err := json.Unmarshal([]byte(r.stdout), &plan); err != nil {
		t.Fatal(err)
	}
	for i, task := range plan.Tasks {
		if !slices.Equal(task.GPUs, []int{i + 1}) || task.Env["CUDA_VISIBLE_DEVICES"] != uuids[i] ||
			!slices.Equal(task.GPUUUIDs, []string{uuids[i]}) || task.Argv[len(task.Argv)-1] != uuids[i] {
			t.Errorf("task %s: GPUs %v %v, CUDA_VISIBLE_DEVICES %q, argv %q; want instance %d, %s",
				task.ID, task.GPUs, task.GPUUUIDs, task.Env["CUDA_VISIBLE_DEVICES"], task.Argv, i+1, uuids[i])
		}
	}

	// A task of 2 GPUs: instances are not combinable, and none is given.
	r = tfhive(t, f.Env(), f.Dir, fleetArgs(f, "plan", "--workers", "1", "--gpus-per-worker", "2", "--", "python", "train.py")...)
	wantCode(t, r, 3)
	wantContains(t, "plan --gpus-per-worker 2", r.stderr, "not enough free GPUs", "a MIG instance is one task's only GPU; tasks here ask for 2")

	// Run A holds two instances; each task sees its own in its env.
	script := `echo "GOT $TFHIVE_TASK $CUDA_VISIBLE_DEVICES"; [ "$1" = hold ] || exit 0; while :; do sleep 0.1; done`
	argsA, _ := runArgs(t, f, "--name", "mig-a", "--workers", "2", "--gpus-per-worker", "1", "--", "sh", "-c", script, "sh", "hold")
	a := startTfhive(t, f, readStdout, argsA...)
	seenA := map[string]string{}
	if !a.readUntil(func(line string) bool {
		if m := gotLine.FindStringSubmatch(line); m != nil {
			seenA[m[1]] = m[2]
		}
		return len(seenA) == 2
	}) {
		a.Wait()
		t.Fatalf("run A's tasks never said their devices:\n%s\n%s", a.read.String(), a.other.String())
	}
	a.discardRest()
	for task, dev := range seenA {
		if !slices.Contains(uuids, dev) {
			t.Errorf("run A %s saw CUDA_VISIBLE_DEVICES=%q, not one MIG instance's UUID (%v)", task, dev, uuids)
		}
	}
	if seenA["worker:0"] == seenA["worker:1"] {
		t.Errorf("run A's two tasks share %s", seenA["worker:0"])
	}

	// top, into a pipe: the instances run A holds are its, the others free.
	r = tfhive(t, f.Env(), f.Dir, fleetArgs(f, "top")...)
	wantCode(t, r, 0)
	top := rowsOf(r.stdout, "gpu-mig")
	held := 0
	for _, row := range top {
		if strings.Contains(row[1], "(MIG of 0)") && row[4] == "claimed" && strings.Contains(row[5], "mig-a") {
			held++
		}
	}
	if len(top) != 5 || held != 2 {
		t.Errorf("top: want 5 rows, 2 instances claimed by mig-a, got %v\n%s", top, r.stdout)
	}
	// Its count is of the instances, not of the GPU they split.
	wantContains(t, "top", r.stdout, "4 GPUs, 2 free")

	// Run B, beside it, gets the other two: claims are per instance.
	argsB, _ := runArgs(t, f, "--name", "mig-b", "--workers", "2", "--gpus-per-worker", "1", "--", "sh", "-c", script, "sh", "once")
	r = tfhive(t, f.Env(), f.Dir, argsB...)
	wantCode(t, r, 0)
	seenB := migDevices(r.stdout)
	if len(seenB) != 2 || seenB["worker:0"] == seenB["worker:1"] {
		t.Fatalf("run B's tasks saw %v, want two instances\n%s", seenB, r.stdout)
	}
	for _, dev := range seenB {
		if !slices.Contains(uuids, dev) || dev == seenA["worker:0"] || dev == seenA["worker:1"] {
			t.Errorf("run B got %s: run A holds %v", dev, seenA)
		}
	}

	// With A's two held, a third task of one GPU more than is free is refused.
	r = tfhive(t, f.Env(), f.Dir, fleetArgs(f, "plan", "--workers", "3", "--gpus-per-worker", "1", "--", "python", "train.py")...)
	wantCode(t, r, 3)
	wantContains(t, "plan --workers 3", r.stderr, "asked 3 (3 workers × 1), found 2", "claimed", "run mig-a")
}
