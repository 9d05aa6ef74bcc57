package e2e

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/tfhive/tfhive/probe/sshtest"
	"github.com/tfhive/tfhive/schedule"
)

func planFleet(t *testing.T) *sshtest.Fleet {
	return sshtest.Start(t,
		sshtest.Profile{Name: "gpu-a", GPU: "idle-2gpu.xml"},
		sshtest.Profile{Name: "gpu-b", GPU: "busy-4gpu.xml", BusyPIDs: busyCommands},
		sshtest.Profile{Name: "cpu-c"},
	)
}

func TestPlanJSONOnFleet(t *testing.T) {
	f := planFleet(t)
	r := tfhive(t, f.Env(), f.Dir, fleetArgs(f, "plan", "--json", "--ps", "2", "--workers", "3", "--name", "e2e-run",
		"--", "python", "train.py", "--job={job_name}", "--task={task_index}", "--ps={ps_hosts}")...)
	wantCode(t, r, 0)
	var p schedule.Plan
	if err := json.Unmarshal([]byte(r.stdout), &p); err != nil {
		t.Fatalf("plan --json: %v\n%s", err, r.stdout)
	}
	if p.RunID != "e2e-run" || len(p.Tasks) != 5 {
		t.Fatalf("run %q with %d tasks, want e2e-run with 5", p.RunID, len(p.Tasks))
	}
	// Free GPUs: gpu-a 0,1 and gpu-b 0 only (gpu-b 1-3 are busy).
	free := map[string]bool{"gpu-a/0": true, "gpu-a/1": true, "gpu-b/0": true}
	used := map[string]bool{}
	ports := map[string]bool{}
	psHosts := map[string]bool{}
	for _, task := range p.Tasks {
		if ports[task.Address] {
			t.Errorf("address %s given twice", task.Address)
		}
		ports[task.Address] = true
		for _, g := range task.GPUs {
			key := task.Host + "/" + itoa(g)
			if !free[key] || used[key] {
				t.Errorf("%s got GPU %s (free: %v, already used: %v)", task.ID, key, free[key], used[key])
			}
			used[key] = true
		}
		if task.Role == "ps" {
			psHosts[task.Host] = true
			if len(task.GPUs) != 0 || task.Env["CUDA_VISIBLE_DEVICES"] != "" {
				t.Errorf("%s: a CPU ps must get CUDA_VISIBLE_DEVICES=\"\", got %q", task.ID, task.Env["CUDA_VISIBLE_DEVICES"])
			}
		}
		if !strings.HasPrefix(task.Address, "127.0.0.1:") {
			t.Errorf("%s: address %s, want the hosts' HostName 127.0.0.1", task.ID, task.Address)
		}
		var tc struct {
			Cluster map[string][]string
			Task    struct {
				Type  string
				Index int
			}
		}
		if err := json.Unmarshal([]byte(task.Env["TF_CONFIG"]), &tc); err != nil {
			t.Fatalf("%s TF_CONFIG: %v", task.ID, err)
		}
		if tc.Task.Type != task.Role || tc.Task.Index != task.Index || len(tc.Cluster["worker"]) != 3 || len(tc.Cluster["ps"]) != 2 {
			t.Errorf("%s TF_CONFIG %s", task.ID, task.Env["TF_CONFIG"])
		}
		wantArgv := []string{"python", "train.py", "--job=" + task.Role, "--task=" + itoa(task.Index), "--ps=" + strings.Join(p.Cluster.PS, ",")}
		if strings.Join(task.Argv, "\x00") != strings.Join(wantArgv, "\x00") {
			t.Errorf("%s argv %q, want %q", task.ID, task.Argv, wantArgv)
		}
	}
	if len(psHosts) != 2 {
		t.Errorf("2 ps should go to 2 distinct hosts, went to %v", psHosts)
	}
	// Ports already listening on the host (sshd's among them) are skipped.
	for _, h := range f.Hosts {
		if ports["127.0.0.1:"+itoa(h.Port)] {
			t.Errorf("a task got sshd's port %d", h.Port)
		}
	}
}

func TestPlanTableAndNotEnough(t *testing.T) {
	t.Parallel() // beside others, on a fleet of its own (testing.md)
	f := planFleet(t)
	r := tfhive(t, f.Env(), f.Dir, fleetArgs(f, "plan", "--workers", "2", "--", "python", "train.py")...)
	wantCode(t, r, 0)
	wantContains(t, "plan table", r.stdout, "ROLE", "worker:0", "TF_CONFIG", "GPU0")
	if rows := rowsOf(r.stdout, "gpu-b"); len(rows) == 0 || !strings.Contains(strings.Join(rows[0], " "), "busy") {
		t.Errorf("the matrix should show gpu-b's busy GPUs: %v", rows)
	}

	r = tfhive(t, f.Env(), f.Dir, fleetArgs(f, "plan", "--workers", "4", "--", "python", "train.py")...)
	wantCode(t, r, 3)
	wantContains(t, "stderr", r.stderr, "tfhive: error: not enough free GPUs: asked 4", "found 3",
		"gpu-a: 2 free", "gpu-b: 1 free", "util 85% > 10%", "cpu-c: ", "tfhive: hint:")
	if strings.Contains(r.stdout, "ROLE") {
		t.Error("no plan may be printed when it cannot be made")
	}

	// Bad requests fail before any host is probed.
	before := f.Host("gpu-a").SMICalls()
	for _, args := range [][]string{
		{"plan", "--workers", "2", "--", "python", "{jobname}"},
		{"plan", "--tf-flags", "--chief", "--", "python", "x.py"},
		{"plan", "--strategy", "scatter", "--", "python", "x.py"},
		{"plan", "--workers", "1"},
	} {
		r := tfhive(t, f.Env(), f.Dir, fleetArgs(f, args...)...)
		wantCode(t, r, 2)
	}
	if f.Host("gpu-a").SMICalls() != before {
		t.Error("a bad request probed hosts")
	}
}
