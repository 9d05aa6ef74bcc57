package schedule

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"net"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/tfhive/tfhive/probe/inventory"
)

// checkTorchPlan asserts what torchrun promises a script, for every torch
// plan: ranks 0…n-1 in plan order with the chief first; one MASTER_ADDR and
// MASTER_PORT, rank 0's address and a port nothing listens on there; the
// ranks of a host consecutive, LOCAL_RANK counting them, LOCAL_WORLD_SIZE
// their number, GROUP_RANK the host's position; CUDA_VISIBLE_DEVICES the
// host's rank GPUs in local-rank order with the rank's own at LOCAL_RANK×N;
// and nothing of TensorFlow's.
func checkTorchPlan(t *testing.T, in inventory.Inventory, p *Plan) {
	t.Helper()
	if len(p.Tasks) == 0 {
		t.Fatal("torch plan without ranks")
	}
	if !reflect.DeepEqual(p.Cluster, ClusterSpec{}) || p.Evaluator != "" {
		t.Errorf("torch plan with a TF cluster: %+v %q", p.Cluster, p.Evaluator)
	}
	r0 := p.Tasks[0]
	master, port := r0.Env["MASTER_ADDR"], r0.Env["MASTER_PORT"]
	if master != r0.Address || p.Master != net.JoinHostPort(master, port) {
		t.Errorf("master %q / plan master %q, want rank 0's address %q", master, p.Master, r0.Address)
	}
	mp, err := strconv.Atoi(port)
	if err != nil || mp < 1 {
		t.Errorf("MASTER_PORT %q", port)
	}
	for i := range in.Hosts {
		h := &in.Hosts[i]
		for _, task := range p.Tasks {
			if task.Host == h.Name && task.Address == master && slices.Contains(h.ListeningPorts, mp) {
				t.Errorf("MASTER_PORT %d is listening on %s, which shares %s", mp, h.Name, master)
			}
		}
	}
	var hosts []string // in GROUP_RANK order
	perHost := map[string][]Task{}
	for _, task := range p.Tasks {
		if len(hosts) == 0 || hosts[len(hosts)-1] != task.Host {
			if slices.Contains(hosts, task.Host) {
				t.Errorf("ranks of %s are not consecutive", task.Host)
			}
			hosts = append(hosts, task.Host)
		}
		perHost[task.Host] = append(perHost[task.Host], task)
	}
	n := len(p.Tasks[0].GPUs)
	for rank, task := range p.Tasks {
		if task.Role != RoleChief && task.Role != RoleWorker || task.Role == RoleChief && rank != 0 {
			t.Errorf("rank %d is %s", rank, task.ID)
		}
		if _, ok := task.Env["TF_CONFIG"]; ok || task.TFConfig != "" || task.Port != 0 {
			t.Errorf("%s: TensorFlow leftovers: TF_CONFIG %q port %d", task.ID, task.TFConfig, task.Port)
		}
		if len(task.GPUs) != n {
			t.Errorf("%s: %d GPUs, rank 0 has %d", task.ID, len(task.GPUs), n)
		}
		mates := perHost[task.Host]
		local := slices.IndexFunc(mates, func(o Task) bool { return o.ID == task.ID })
		var cvd []int
		for _, m := range mates {
			cvd = append(cvd, m.GPUs...)
		}
		want := map[string]string{
			"MASTER_ADDR": master, "MASTER_PORT": port, "WORLD_SIZE": strconv.Itoa(len(p.Tasks)),
			"RANK": strconv.Itoa(rank), "LOCAL_RANK": strconv.Itoa(local),
			"LOCAL_WORLD_SIZE": strconv.Itoa(len(mates)), "GROUP_RANK": strconv.Itoa(slices.Index(hosts, task.Host)),
			"CUDA_VISIBLE_DEVICES": joinInts(cvd), "CUDA_DEVICE_ORDER": "PCI_BUS_ID",
			"TFHIVE_RUN_ID": p.RunID, "TFHIVE_TASK": task.ID,
		}
		if !mapsEqual(task.Env, want) {
			t.Errorf("%s: env\n got %v\nwant %v", task.ID, task.Env, want)
		}
		if own := cvd[local*n : local*n+n]; !slices.Equal(own, task.GPUs) {
			t.Errorf("%s: CUDA devices %d… are GPUs %v, its own are %v", task.ID, local*n, own, task.GPUs)
		}
	}
}

// torchLayout is one word per rank, "worker:0@a[0]/0.1.2" for rank 0,
// local rank 1 of 2 on group 2, plus the host's CUDA_VISIBLE_DEVICES
// when it differs from the rank's own GPUs, then the master.
func torchLayout(p *Plan) string {
	var s []string
	for _, t := range p.Tasks {
		e := t.Env
		w := fmt.Sprintf("%s@%s[%s]/%s.%s.%s.%s", t.ID, t.Host, joinInts(t.GPUs), e["RANK"], e["LOCAL_RANK"], e["LOCAL_WORLD_SIZE"], e["GROUP_RANK"])
		if cvd := e["CUDA_VISIBLE_DEVICES"]; cvd != joinInts(t.GPUs) {
			w += "{" + cvd + "}"
		}
		s = append(s, w)
	}
	return strings.Join(s, " ") + " master " + p.Master
}

func torchReq(mod func(*Request)) Request {
	return req(func(r *Request) {
		r.Framework = FrameworkTorch
		if mod != nil {
			mod(r)
		}
	})
}

func TestTorchLayout(t *testing.T) {
	three2 := inv(host("a", 2), host("b", 2), host("c", 2))
	tests := []struct {
		name string
		inv  inventory.Inventory
		req  func(*Request)
		want string
	}{
		{"one rank", inv(host("a", 1)), nil, "worker:0@a[0]/0.0.1.0 master a:2222"},
		{"spread: the ranks of a host are consecutive", three2, func(r *Request) { r.Workers = 4 },
			"worker:0@a[0]/0.0.2.0{0,1} worker:1@a[1]/1.1.2.0{0,1} worker:2@b[0]/2.0.1.1 worker:3@c[0]/3.0.1.2 master a:2222"},
		{"pack", three2, func(r *Request) { r.Workers = 3; r.Strategy = StrategyPack },
			"worker:0@a[0]/0.0.2.0{0,1} worker:1@a[1]/1.1.2.0{0,1} worker:2@b[0]/2.0.1.1 master a:2222"},
		{"the chief is rank 0", three2, func(r *Request) { r.Chief, r.Workers = true, 3 },
			"chief:0@a[0]/0.0.2.0{0,1} worker:0@a[1]/1.1.2.0{0,1} worker:1@b[0]/2.0.1.1 worker:2@c[0]/3.0.1.2 master a:2222"},
		{"chief alone", three2, func(r *Request) { r.Chief, r.Workers = true, 0 },
			"chief:0@a[0]/0.0.1.0 master a:2222"},
		{"multi-GPU ranks: own GPUs at LOCAL_RANK×N", inv(host("a", 4), host("b", 2)),
			func(r *Request) { r.Workers, r.GPUsPerWorker, r.Strategy = 3, 2, StrategyPack },
			"worker:0@a[0,1]/0.0.2.0{0,1,2,3} worker:1@a[2,3]/1.1.2.0{0,1,2,3} worker:2@b[0,1]/2.0.1.1 master a:2222"},
		{"busy and excluded GPUs left out of CUDA_VISIBLE_DEVICES", inv(host("a", 4, proc(0, "bob", 1, "python")), host("b", 1)),
			func(r *Request) { r.Workers, r.Strategy, r.Exclude = 3, StrategyPack, Exclusions{"a": {2}} },
			"worker:0@a[1]/0.0.2.0{1,3} worker:1@a[3]/1.1.2.0{1,3} worker:2@b[0]/2.0.1.1 master a:2222"},
		{"CPU ranks see no GPU", three2, func(r *Request) { r.Workers, r.GPUsPerWorker = 4, 0 },
			"worker:0@a[]/0.0.2.0 worker:1@a[]/1.1.2.0 worker:2@b[]/2.0.1.1 worker:3@c[]/3.0.1.2 master a:2222"},
		{"master port skips what listens on rank 0's host", inv(host("a", 1, listening(22, 2222, 2223)), host("b", 1)),
			func(r *Request) { r.Workers = 2 },
			"worker:0@a[0]/0.0.1.0 worker:1@b[0]/1.0.1.1 master a:2224"},
		{"master port pooled over hosts sharing rank 0's address",
			inv(host("a", 1, addr("127.0.0.1"), listening(2222)), host("b", 1, addr("127.0.0.1"), listening(2223))),
			func(r *Request) { r.Workers = 2 },
			"worker:0@a[0]/0.0.1.0 worker:1@b[0]/1.0.1.1 master 127.0.0.1:2224"},
		{"another address's listening ports do not count", inv(host("a", 1), host("b", 1, listening(2222))),
			func(r *Request) { r.Workers = 2 },
			"worker:0@a[0]/0.0.1.0 worker:1@b[0]/1.0.1.1 master a:2222"},
		{"IPv6 master bracketed in the plan only", inv(host("a", 1, addr("fd00::1")), host("b", 1, addr("fd00::2"))),
			func(r *Request) { r.Workers = 2 },
			"worker:0@a[0]/0.0.1.0 worker:1@b[0]/1.0.1.1 master [fd00::1]:2222"},
		{"all local gives localhost", inv(host("a", 2, addr("192.168.1.5"), local())),
			func(r *Request) { r.Workers = 2 },
			"worker:0@a[0]/0.0.2.0{0,1} worker:1@a[1]/1.1.2.0{0,1} master localhost:2222"},
		{"custom port range", three2, func(r *Request) { r.PortLo, r.PortHi = 29500, 29510 },
			"worker:0@a[0]/0.0.1.0 master a:29500"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Make(tt.inv, torchReq(tt.req))
			if err != nil {
				t.Fatalf("Make: %v", err)
			}
			if got := torchLayout(p); got != tt.want {
				t.Errorf("layout\n got %s\nwant %s", got, tt.want)
			}
			checkPlan(t, tt.inv, p)
		})
	}
}

func TestTorchTask(t *testing.T) {
	in := inv(host("gpu01", 2, addr("10.0.0.1"), listening(22, 2222)), host("gpu02", 2, addr("10.0.0.2")))
	p, err := Make(in, torchReq(func(r *Request) {
		r.Chief, r.Workers = true, 2
		r.RunID = "20260101-abc"
		r.Command = []string{"python", "train.py", "--rank={rank}", "--world={world_size}",
			"--init=tcp://{master_addr}:{master_port}", "--i={task_index}", "--on={host}", "--gpus={gpus}", "--run={run_id}", "{{rank}}"}
	}))
	if err != nil {
		t.Fatal(err)
	}
	if p.Framework != "torch" || p.Master != "10.0.0.1:2223" || !p.Torch() {
		t.Fatalf("framework %q master %q", p.Framework, p.Master)
	}
	w1 := p.Tasks[2] // chief:0 and worker:0 fill gpu01
	if w1.ID != "worker:1" || w1.Host != "gpu02" || w1.Address != "10.0.0.2" || w1.Port != 0 || w1.TFConfig != "" {
		t.Fatalf("worker:1 = %+v", w1)
	}
	wantEnv := map[string]string{
		"MASTER_ADDR": "10.0.0.1", "MASTER_PORT": "2223", "WORLD_SIZE": "3", "RANK": "2",
		"LOCAL_RANK": "0", "LOCAL_WORLD_SIZE": "1", "GROUP_RANK": "1",
		"CUDA_VISIBLE_DEVICES": "0", "CUDA_DEVICE_ORDER": "PCI_BUS_ID",
		"TFHIVE_RUN_ID": "20260101-abc", "TFHIVE_TASK": "worker:1",
	}
	if !mapsEqual(w1.Env, wantEnv) {
		t.Errorf("env\n got %v\nwant %v", w1.Env, wantEnv)
	}
	wantArgv := []string{"python", "train.py", "--rank=2", "--world=3", "--init=tcp://10.0.0.1:2223",
		"--i=1", "--on=gpu02", "--gpus=0", "--run=20260101-abc", "{rank}"}
	if !slices.Equal(w1.Argv, wantArgv) {
		t.Errorf("argv\n got %q\nwant %q", w1.Argv, wantArgv)
	}
	if c := p.Tasks[0]; c.ID != "chief:0" || c.Env["RANK"] != "0" || c.Argv[2] != "--rank=0" || c.Argv[5] != "--i=0" {
		t.Errorf("chief = %+v", c)
	}
	checkPlan(t, in, p)

	// The JSON document: framework and master added, nothing of
	// TensorFlow's, and it reads back to the same plan.
	data, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	json.Unmarshal(data, &doc)
	if doc["framework"] != "torch" || doc["master"] != "10.0.0.1:2223" || doc["version"] != float64(1) {
		t.Errorf("plan JSON header: %v %v %v", doc["framework"], doc["master"], doc["version"])
	}
	for _, k := range []string{"cluster", "evaluator"} {
		if _, ok := doc[k]; ok {
			t.Errorf("torch plan JSON has %q", k)
		}
	}
	task := doc["tasks"].([]any)[0].(map[string]any)
	for _, k := range []string{"port", "tf_config"} {
		if _, ok := task[k]; ok {
			t.Errorf("torch task JSON has %q", k)
		}
	}
	var back Plan
	if err := json.Unmarshal(data, &back); err != nil || !reflect.DeepEqual(&back, p) {
		t.Errorf("torch plan does not survive a JSON round trip: %v", err)
	}
}

func TestTorchUsageErrors(t *testing.T) {
	in := inv(host("a", 2))
	tests := []struct {
		name     string
		req      func(*Request)
		msg      string
		hintPart string
	}{
		{"unknown framework", func(r *Request) { r.Framework = "jax" }, `unknown framework "jax"`, "--framework tf or --framework torch"},
		{"ps", func(r *Request) { r.PS = 1 }, "--ps cannot be used with --framework torch", "no parameter servers"},
		{"gpus per ps", func(r *Request) { r.GPUsPerPS = 1 }, "--gpus-per-ps cannot be used with --framework torch", "--gpus-per-worker"},
		{"evaluator", func(r *Request) { r.Evaluator = true }, "--evaluator cannot be used with --framework torch", "no evaluator"},
		{"tf-flags", func(r *Request) { r.TFFlags, r.Chief = true, true }, "--tf-flags cannot be used with --framework torch", "MASTER_ADDR"},
		{"nothing to train", func(r *Request) { r.Workers = 0 }, "nothing to train: no workers and no chief", "--workers"},
		{"{job_name}", func(r *Request) { r.Command = []string{"x", "--job={job_name}"} },
			"placeholder {job_name} cannot be used with --framework torch", "{rank}"},
		{"{port}", func(r *Request) { r.Command = []string{"x", "--port={port}"} },
			"placeholder {port} cannot be used with --framework torch", "{master_port}"},
		{"{worker_hosts}", func(r *Request) { r.Command = []string{"x", "{task_index}", "{worker_hosts}"} },
			"placeholder {worker_hosts} cannot be used with --framework torch", "{master_addr}:{master_port}"},
		{"{tf_config}", func(r *Request) { r.Command = []string{"x", "{tf_config}"} },
			"placeholder {tf_config} cannot be used with --framework torch", "no TF_CONFIG"},
		{"{rank} without torch", func(r *Request) { r.Framework = FrameworkTF; r.Command = []string{"x", "--rank={rank}"} },
			"placeholder {rank} cannot be used with --framework tf", "add --framework torch"},
		{"{master_port} without torch", func(r *Request) { r.Framework = ""; r.Command = []string{"x", "{master_port}"} },
			"placeholder {master_port} cannot be used with --framework tf", "add --framework torch"},
		{"unknown placeholder still suggests", func(r *Request) { r.Command = []string{"x", "{rnak}"} },
			"unknown placeholder {rnak} in command", "did you mean {rank}?"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := torchReq(tt.req)
			r.SetDefaults() // as Make does; "" means tf
			ve := r.Validate()
			_, err := Make(in, r)
			if ve == nil || ve.Error() != fmt.Sprint(err) {
				t.Errorf("Validate (before any host) gives %v, Make %v", ve, err)
			}
			ue, ok := err.(*UsageError)
			if !ok {
				t.Fatalf("want *UsageError, got %T %v", err, err)
			}
			if ue.Error() != tt.msg || !strings.Contains(ue.Hint(), tt.hintPart) {
				t.Errorf("got %q hint %q, want %q hint containing %q", ue.Error(), ue.Hint(), tt.msg, tt.hintPart)
			}
		})
	}
	// The placeholders both frameworks share are fine in torch.
	if _, err := Make(in, torchReq(func(r *Request) { r.Command = []string{"x", "{task_index}{host}{gpus}{run_id}"} })); err != nil {
		t.Errorf("shared placeholders refused: %v", err)
	}
}

func TestTorchMasterPortExhausted(t *testing.T) {
	in := inv(host("a", 1, addr("127.0.0.1"), listening(2222)), host("b", 1, addr("127.0.0.1"), listening(2223, 2224)))
	_, err := Make(in, torchReq(func(r *Request) { r.Workers, r.PortLo, r.PortHi = 2, 2222, 2224 }))
	ce := assertCapacity(t, err)
	want := "no free port for MASTER_PORT on 127.0.0.1: every port of --port-range 2222-2224 is in use: 3 listening there"
	if ce.Error() != want {
		t.Errorf("got  %s\nwant %s", ce.Error(), want)
	}
	if !strings.Contains(ce.Hint(), "--port-range") || !slices.Equal(ce.Details(), []string{"127.0.0.1: hosts a, b"}) {
		t.Errorf("hint %q details %q", ce.Hint(), ce.Details())
	}
	// Ranks need no ports of their own: one free port is enough for any
	// number of them.
	p, err := Make(in, torchReq(func(r *Request) { r.Workers, r.PortLo, r.PortHi = 2, 2222, 2225 }))
	if err != nil || p.Master != "127.0.0.1:2225" {
		t.Errorf("Make = %v, %v", p, err)
	}
}

func TestTorchPlanProperties(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	var planned, short int
	for i := range 2000 {
		in := randomInventory(rng)
		r := randomRequest(rng, in)
		r.Framework = FrameworkTorch
		r.PS, r.GPUsPerPS, r.Evaluator = 0, 0, false
		p, err := Make(in, r)
		if err != nil {
			var ce *CapacityError
			var ue *UsageError
			switch {
			case errors.As(err, &ce):
				short++
			case errors.As(err, &ue):
			default:
				t.Fatalf("case %d: unexpected error %T %v", i, err, err)
			}
			continue
		}
		planned++
		t.Run(fmt.Sprint(i), func(t *testing.T) { checkPlan(t, in, p) })
		if len(p.Tasks) != r.Workers+b2i(r.Chief) {
			t.Errorf("case %d: %d ranks", i, len(p.Tasks))
		}
		// The same request as TensorFlow places as many tasks per host:
		// torch only renumbers them.
		r.Framework = FrameworkTF
		if tf, err := Make(in, r); err == nil {
			if got, want := tasksPerHost(p), tasksPerHost(tf); !reflect.DeepEqual(got, want) {
				t.Errorf("case %d: torch puts %v ranks per host, tf %v tasks", i, got, want)
			}
		}
	}
	if planned < 500 || short < 200 {
		t.Errorf("weak sample: %d planned, %d short", planned, short)
	}
}

func tasksPerHost(p *Plan) map[string]int {
	n := map[string]int{}
	for _, t := range p.Tasks {
		n[t.Host]++
	}
	return n
}
