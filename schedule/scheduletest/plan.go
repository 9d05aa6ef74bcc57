// Package scheduletest builds small plans for tests of what runs them
// (the lifecycle, the engine): no probe, no placement, just the tasks.
package scheduletest

import (
	"strconv"
	"strings"

	"github.com/tfhive/tfhive/schedule"
)

// Plan builds a plan from task ids with their hosts, "worker:1@h2".
// A chief makes it a chief-mode TensorFlow plan; framework "torch" makes
// every task a rank.
func Plan(framework string, tasks ...string) *schedule.Plan {
	p := &schedule.Plan{RunID: "r1", Framework: framework}
	for i, s := range tasks {
		id, host, _ := strings.Cut(s, "@")
		role, idx, _ := strings.Cut(id, ":")
		n, _ := strconv.Atoi(idx)
		t := schedule.Task{ID: id, Role: role, Index: n, Host: host, Address: host + ":" + strconv.Itoa(2222+i),
			Port: 2222 + i, GPUs: []int{n}, GPUUUIDs: []string{"GPU-" + id}, Argv: []string{"train"},
			Env: map[string]string{"TFHIVE_TASK": id}}
		if framework == schedule.FrameworkTorch {
			t.Port, t.Env["RANK"], t.Env["MASTER_PORT"] = 0, strconv.Itoa(i), "29500"
		}
		if role == schedule.RoleChief {
			p.Cluster.Chief = append(p.Cluster.Chief, t.Address)
		}
		p.Tasks = append(p.Tasks, t)
	}
	return p
}

// TF is a TensorFlow plan of tasks (Plan).
func TF(tasks ...string) *schedule.Plan { return Plan("tensorflow", tasks...) }
