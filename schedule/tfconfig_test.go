package schedule

import (
	"encoding/json"
	"fmt"
	"net"
	"slices"
	"strconv"
	"testing"

	"github.com/tfhive/tfhive/probe/inventory"
)

// checkTFConfig applies the rules TensorFlow uses when it reads TF_CONFIG
// (tf.distribute.cluster_resolver.TFConfigClusterResolver, RunConfig and
// multi_worker_util.normalize_cluster_spec): a JSON object with "cluster"
// mapping job names to lists of "host:port", and "task" with a string
// "type" and an integer "index" (TF accepts an int or a numeric string; we
// emit an int). The chief and evaluator jobs have at most one task; the
// evaluator is never in the cluster; a training task's type must be a job of
// the cluster and its index within that job.
func checkTFConfig(s string) error {
	var c struct {
		Cluster map[string][]string `json:"cluster"`
		Task    struct {
			Type  string          `json:"type"`
			Index json.RawMessage `json:"index"`
		} `json:"task"`
	}
	if err := json.Unmarshal([]byte(s), &c); err != nil {
		return fmt.Errorf("not JSON of the TF_CONFIG shape: %v", err)
	}
	if len(c.Cluster) == 0 {
		return fmt.Errorf("empty cluster")
	}
	for job, addrs := range c.Cluster {
		switch job {
		case RoleChief, RolePS, RoleWorker:
		case RoleEvaluator:
			return fmt.Errorf("evaluator in the cluster")
		default:
			return fmt.Errorf("unexpected job %q", job)
		}
		if len(addrs) == 0 {
			return fmt.Errorf("job %q listed with no tasks", job)
		}
		if job == RoleChief && len(addrs) > 1 {
			return fmt.Errorf("%d chiefs", len(addrs))
		}
		for _, a := range addrs {
			if _, port, err := net.SplitHostPort(a); err != nil || port == "" {
				return fmt.Errorf("bad address %q", a)
			}
		}
	}
	idx, err := strconv.Atoi(string(c.Task.Index))
	if err != nil {
		return fmt.Errorf("task.index %s is not an integer", c.Task.Index)
	}
	if c.Task.Type == RoleEvaluator {
		if idx != 0 {
			return fmt.Errorf("evaluator index %d", idx)
		}
		return nil
	}
	if idx < 0 || idx >= len(c.Cluster[c.Task.Type]) {
		return fmt.Errorf("task %s:%d not in cluster", c.Task.Type, idx)
	}
	return nil
}

func TestCheckTFConfigCatchesBadOnes(t *testing.T) {
	// The checker must be able to fail, or the golden checks prove nothing.
	bad := []string{
		`{"cluster":{"worker":["a:1"],"evaluator":["a:2"]},"task":{"type":"worker","index":0}}`,
		`{"cluster":{"chief":["a:1","a:2"]},"task":{"type":"chief","index":0}}`,
		`{"cluster":{"worker":["a:1"]},"task":{"type":"worker","index":1}}`,
		`{"cluster":{"worker":["a:1"]},"task":{"type":"ps","index":0}}`,
		`{"cluster":{"worker":["a"]},"task":{"type":"worker","index":0}}`,
		`{"cluster":{"worker":["a:1"]},"task":{"type":"worker","index":"x"}}`,
		`{"cluster":{},"task":{"type":"worker","index":0}}`,
	}
	for _, s := range bad {
		if checkTFConfig(s) == nil {
			t.Errorf("accepted %s", s)
		}
	}
}

func TestTFConfigGolden(t *testing.T) {
	c := ClusterSpec{Chief: []string{"h1:2222"}, PS: []string{"h1:2223", "h2:2222"}, Worker: []string{"h2:2223", "[fd00::1]:2222"}}
	tests := []struct {
		role  string
		index int
		want  string
	}{
		{RoleChief, 0, `{"cluster":{"chief":["h1:2222"],"ps":["h1:2223","h2:2222"],"worker":["h2:2223","[fd00::1]:2222"]},"task":{"type":"chief","index":0}}`},
		{RolePS, 1, `{"cluster":{"chief":["h1:2222"],"ps":["h1:2223","h2:2222"],"worker":["h2:2223","[fd00::1]:2222"]},"task":{"type":"ps","index":1}}`},
		{RoleWorker, 1, `{"cluster":{"chief":["h1:2222"],"ps":["h1:2223","h2:2222"],"worker":["h2:2223","[fd00::1]:2222"]},"task":{"type":"worker","index":1}}`},
		{RoleEvaluator, 0, `{"cluster":{"chief":["h1:2222"],"ps":["h1:2223","h2:2222"],"worker":["h2:2223","[fd00::1]:2222"]},"task":{"type":"evaluator","index":0}}`},
	}
	for _, tt := range tests {
		got := c.TFConfig(tt.role, tt.index)
		if got != tt.want {
			t.Errorf("%s:%d\n got %s\nwant %s", tt.role, tt.index, got, tt.want)
		}
		if err := checkTFConfig(got); err != nil {
			t.Errorf("%s:%d: TensorFlow would reject it: %v", tt.role, tt.index, err)
		}
	}
	if got, want := (ClusterSpec{Worker: []string{"a:1"}}).JSON(), `{"worker":["a:1"]}`; got != want {
		t.Errorf("empty roles must be omitted: got %s", got)
	}
}

// checkPlan asserts what must hold for every plan: each task's TF_CONFIG is
// valid for TensorFlow, no GPU serves two tasks, only free GPUs are used, all
// of a task's GPUs exist on its host, host:port is unique per address and
// outside the host's listening ports, and the env matches the task. Torch
// plans have their own rules instead of the TF_CONFIG and port ones
// (checkTorchPlan).
func checkPlan(t *testing.T, in inventory.Inventory, p *Plan) {
	t.Helper()
	byName := map[string]*inventory.HostInventory{}
	for i := range in.Hosts {
		byName[in.Hosts[i].Name] = &in.Hosts[i]
	}
	free := map[string]bool{}
	for _, m := range p.Matrix {
		for _, g := range m.GPUs {
			if g.State == Free {
				free[m.Host+"/"+strconv.Itoa(g.Index)] = true
			}
		}
	}
	usedGPU := map[string]string{}
	usedAddr := map[string]string{}
	order := []string{RolePS, RoleChief, RoleWorker, RoleEvaluator}
	if p.Torch() {
		checkTorchPlan(t, in, p)
	}
	for i, task := range p.Tasks {
		if err := checkTFConfig(task.TFConfig); err != nil && !p.Torch() {
			t.Errorf("%s: %v: %s", task.ID, err, task.TFConfig)
		}
		if i > 0 {
			prev := p.Tasks[i-1]
			pr, tr := slices.Index(order, prev.Role), slices.Index(order, task.Role)
			if pr > tr || (pr == tr && prev.Index+1 != task.Index) {
				t.Errorf("task order: %s after %s", task.ID, prev.ID)
			}
		}
		h := byName[task.Host]
		if h == nil || !h.Reachable() {
			t.Errorf("%s on unknown or unreachable host %q", task.ID, task.Host)
			continue
		}
		for _, g := range task.GPUs {
			k := task.Host + "/" + strconv.Itoa(g)
			if other, dup := usedGPU[k]; dup {
				t.Errorf("GPU %s given to %s and %s", k, other, task.ID)
			}
			usedGPU[k] = task.ID
			if !free[k] {
				t.Errorf("%s got GPU %s which is not free", task.ID, k)
			}
		}
		if len(task.GPUUUIDs) != len(task.GPUs) || task.Env["TFHIVE_TASK"] != task.ID ||
			task.Env["CUDA_DEVICE_ORDER"] != "PCI_BUS_ID" || task.Env["TFHIVE_RUN_ID"] != p.RunID {
			t.Errorf("%s: env or uuids do not match the task: %v %v", task.ID, task.Env, task.GPUUUIDs)
		}
		if p.Torch() {
			continue
		}
		if other, dup := usedAddr[task.Address]; dup {
			t.Errorf("address %s given to %s and %s", task.Address, other, task.ID)
		}
		usedAddr[task.Address] = task.ID
		if slices.Contains(h.ListeningPorts, task.Port) {
			t.Errorf("%s got port %d which %s listens on", task.ID, task.Port, task.Host)
		}
		if task.Env["TF_CONFIG"] != task.TFConfig || task.Env["CUDA_VISIBLE_DEVICES"] != joinInts(task.GPUs) {
			t.Errorf("%s: env or uuids do not match the task: %v %v", task.ID, task.Env, task.GPUUUIDs)
		}
	}
}
