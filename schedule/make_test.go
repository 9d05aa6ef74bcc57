package schedule

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/tfhive/tfhive/probe/inventory"
)

func TestMakeLayout(t *testing.T) {
	two4 := inv(host("a", 4), host("b", 4))
	tests := []struct {
		name string
		inv  inventory.Inventory
		req  func(*Request)
		want string
	}{
		{"spread deals round-robin", two4, func(r *Request) { r.Workers = 3 },
			"worker:0@a[0]:2222 worker:1@b[0]:2222 worker:2@a[1]:2223"},
		{"pack fills a host first", two4, func(r *Request) { r.Workers = 5; r.Strategy = StrategyPack },
			"worker:0@a[0]:2222 worker:1@a[1]:2223 worker:2@a[2]:2224 worker:3@a[3]:2225 worker:4@b[0]:2222"},
		{"multi-GPU workers stay on one host", inv(host("a", 3), host("b", 4)),
			func(r *Request) { r.Workers = 2; r.GPUsPerWorker = 2 },
			"worker:0@a[0,1]:2222 worker:1@b[0,1]:2222"},
		{"spread skips hosts without room", inv(host("a", 3), host("b", 4)),
			func(r *Request) { r.Workers = 3; r.GPUsPerWorker = 2 },
			"worker:0@a[0,1]:2222 worker:1@b[0,1]:2222 worker:2@b[2,3]:2223"},
		{"pack multi-GPU moves on when the rest does not fit", inv(host("a", 3), host("b", 4)),
			func(r *Request) { r.Workers = 2; r.GPUsPerWorker = 2; r.Strategy = StrategyPack },
			"worker:0@a[0,1]:2222 worker:1@b[0,1]:2222"},
		{"CPU ps on distinct hosts, then round-robin", inv(host("a", 1), host("b", 1)),
			func(r *Request) { r.PS = 3; r.Workers = 2 },
			"ps:0@a[]:2222 ps:1@b[]:2222 ps:2@a[]:2223 worker:0@a[0]:2224 worker:1@b[0]:2223"},
		{"CPU ps spread even when packing", inv(host("a", 4), host("b", 4)),
			func(r *Request) { r.PS = 2; r.Workers = 2; r.Strategy = StrategyPack },
			"ps:0@a[]:2222 ps:1@b[]:2222 worker:0@a[0]:2223 worker:1@a[1]:2224"},
		{"chief and evaluator, order ps chief worker evaluator", two4,
			func(r *Request) { r.PS = 1; r.Chief = true; r.Evaluator = true; r.Workers = 2 },
			"ps:0@a[]:2222 chief:0@a[0]:2223 worker:0@b[0]:2222 worker:1@a[1]:2224 evaluator:0@b[1]:2223"},
		{"chief only, no workers", two4, func(r *Request) { r.Workers = 0; r.Chief = true },
			"chief:0@a[0]:2222"},
		{"CPU workers spread over all reachable hosts", inv(host("a", 0, noSMI()), host("b", 0, unreachable("x")), host("c", 0, driverError("NVML"))),
			func(r *Request) { r.Workers = 3; r.GPUsPerWorker = 0 },
			"worker:0@a[]:2222 worker:1@c[]:2222 worker:2@a[]:2223"},
		{"CPU workers packed on the first host", two4,
			func(r *Request) { r.Workers = 2; r.GPUsPerWorker = 0; r.Strategy = StrategyPack },
			"worker:0@a[]:2222 worker:1@a[]:2223"},
		{"GPU ps bigger than workers placed first", inv(host("a", 4), host("b", 4)),
			func(r *Request) { r.PS = 1; r.GPUsPerPS = 4; r.Workers = 2; r.GPUsPerWorker = 2 },
			"ps:0@a[0,1,2,3]:2222 worker:0@b[0,1]:2222 worker:1@b[2,3]:2223"},
		{"GPU ps beside a bigger worker", inv(host("a", 4), host("b", 4)),
			func(r *Request) { r.PS = 2; r.GPUsPerPS = 2; r.Workers = 1; r.GPUsPerWorker = 4 },
			"ps:0@b[0,1]:2222 ps:1@b[2,3]:2223 worker:0@a[0,1,2,3]:2222"},
		{"other order tried when the first fails", inv(host("a", 4), host("b", 3)),
			// ps first would take a[0-2] and leave no host with 2+2 free.
			func(r *Request) {
				r.PS = 1
				r.GPUsPerPS = 3
				r.Workers = 2
				r.GPUsPerWorker = 2
				r.Strategy = StrategyPack
			},
			"ps:0@b[0,1,2]:2222 worker:0@a[0,1]:2222 worker:1@a[2,3]:2223"},
		{"hosts file gpus: limits the GPUs", inv(host("a", 4, allowed(2, 3)), host("b", 1)),
			func(r *Request) { r.Workers = 3; r.Strategy = StrategyPack },
			"worker:0@a[2]:2222 worker:1@a[3]:2223 worker:2@b[0]:2222"},
		{"--exclude GPUs and whole hosts", inv(host("a", 4), host("b", 4), host("c", 1)),
			func(r *Request) {
				r.Workers = 2
				r.Exclude = Exclusions{"a": {0, 1, 2}, "b": nil}
			},
			"worker:0@a[3]:2222 worker:1@c[0]:2222"},
		{"busy, MIG and over-threshold GPUs skipped", inv(host("a", 6, proc(0, "bob", 1, "python"), util(1, 11), memUsed(2, 1025), mig(3), util(4, 10), memUsed(5, 1024))),
			func(r *Request) { r.Workers = 2 },
			"worker:0@a[4]:2222 worker:1@a[5]:2223"},
		{"N/A readings do not make a GPU busy", inv(host("a", 1, func(h *inventory.HostInventory) {
			h.GPUs[0].UtilizationPct, h.GPUs[0].MemoryUsedMiB = nil, nil
		})), nil, "worker:0@a[0]:2222"},
		{"ports skip listening ones", inv(host("a", 3, listening(22, 2222, 2224))),
			func(r *Request) { r.Workers = 3 },
			"worker:0@a[0]:2223 worker:1@a[1]:2225 worker:2@a[2]:2226"},
		{"ports unique per shared address", inv(host("a", 1, addr("127.0.0.1"), listening(2223)), host("b", 1, addr("127.0.0.1"))),
			func(r *Request) { r.Workers = 2; r.PS = 1 },
			"ps:0@a[]:2222 worker:0@a[0]:2224 worker:1@b[0]:2225"},
		{"custom port range", two4, func(r *Request) { r.Workers = 2; r.PortLo, r.PortHi = 5000, 5001 },
			"worker:0@a[0]:5000 worker:1@b[0]:5000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Make(tt.inv, req(tt.req))
			if err != nil {
				t.Fatalf("Make: %v", err)
			}
			if got := layout(p); got != tt.want {
				t.Errorf("layout\n got %s\nwant %s", got, tt.want)
			}
			checkPlan(t, tt.inv, p)
		})
	}
}

func assertCapacity(t *testing.T, err error) *CapacityError {
	t.Helper()
	var ce *CapacityError
	if !errors.As(err, &ce) {
		t.Fatalf("want CapacityError, got %T %v", err, err)
	}
	return ce
}

func TestMakeAddresses(t *testing.T) {
	tests := []struct {
		name    string
		inv     inventory.Inventory
		want    []string // task addresses
		wantErr string
	}{
		{"cluster address used", inv(host("gpu01", 1, addr("10.0.0.1")), host("gpu02", 1, addr("10.0.0.2"))),
			[]string{"10.0.0.1:2222", "10.0.0.2:2222"}, ""},
		{"all local gives localhost", inv(host("a", 1, addr("192.168.1.5"), local()), host("b", 1, addr("127.0.0.1"), local())),
			[]string{"localhost:2222", "localhost:2223"}, ""},
		{"all loopback is fine", inv(host("a", 1, addr("127.0.0.1")), host("b", 1, addr("127.0.0.1"))),
			[]string{"127.0.0.1:2222", "127.0.0.1:2223"}, ""},
		{"IPv6 bracketed", inv(host("a", 1, addr("fd00::1")), host("b", 1, addr("fd00::2"))),
			[]string{"[fd00::1]:2222", "[fd00::2]:2222"}, ""},
		{"local mixed with remote uses real addresses", inv(host("me", 1, addr("10.0.0.9"), local()), host("b", 1, addr("10.0.0.2"))),
			[]string{"10.0.0.9:2222", "10.0.0.2:2222"}, ""},
		{"loopback mixed with remote refused", inv(host("me", 1, addr("localhost"), local()), host("b", 1, addr("10.0.0.2"))),
			nil, "me has loopback address localhost but worker:1 is on b (10.0.0.2): tasks could not reach each other"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Make(tt.inv, req(func(r *Request) { r.Workers = 2 }))
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				if ue, ok := err.(*UsageError); !ok || ue.Hint() == "" {
					t.Errorf("want a UsageError with a hint, got %#v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, task := range p.Tasks {
				got = append(got, task.Address)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("addresses %v, want %v", got, tt.want)
			}
			if !slices.Equal(p.Cluster.Worker, tt.want) {
				t.Errorf("cluster workers %v, want %v", p.Cluster.Worker, tt.want)
			}
		})
	}
}

func TestMakeTask(t *testing.T) {
	in := inv(host("gpu01", 4, addr("10.0.0.1")), host("gpu02", 4, addr("10.0.0.2")))
	p, err := Make(in, req(func(r *Request) {
		r.PS, r.Workers, r.GPUsPerWorker = 1, 2, 2
		r.Command = []string{"python", "train.py", "--job={job_name}", "--i={task_index}", "--ps={ps_hosts}",
			"--w={worker_hosts}", "--c={chief_hosts}", "--spec={cluster_spec}", "--run={run_id}",
			"--on={host}:{port}", "--gpus={gpus}", "${HOME}/{{x}}", `{"a":{"b":1}}`}
		r.RunID = "20260101-abc"
	}))
	if err != nil {
		t.Fatal(err)
	}
	w1 := p.Tasks[2]
	if w1.ID != "worker:1" || w1.Host != "gpu02" || w1.Address != "10.0.0.2:2222" || w1.Port != 2222 {
		t.Fatalf("worker:1 = %+v", w1)
	}
	wantTF := `{"cluster":{"ps":["10.0.0.1:2222"],"worker":["10.0.0.1:2223","10.0.0.2:2222"]},"task":{"type":"worker","index":1}}`
	if w1.TFConfig != wantTF {
		t.Errorf("TF_CONFIG\n got %s\nwant %s", w1.TFConfig, wantTF)
	}
	wantEnv := map[string]string{
		"TF_CONFIG": wantTF, "CUDA_VISIBLE_DEVICES": "0,1", "CUDA_DEVICE_ORDER": "PCI_BUS_ID",
		"TFHIVE_RUN_ID": "20260101-abc", "TFHIVE_TASK": "worker:1",
	}
	if !mapsEqual(w1.Env, wantEnv) {
		t.Errorf("env\n got %v\nwant %v", w1.Env, wantEnv)
	}
	if !slices.Equal(w1.GPUUUIDs, []string{"GPU-gpu02-0", "GPU-gpu02-1"}) {
		t.Errorf("uuids %v", w1.GPUUUIDs)
	}
	wantArgv := []string{"python", "train.py", "--job=worker", "--i=1", "--ps=10.0.0.1:2222",
		"--w=10.0.0.1:2223,10.0.0.2:2222", "--c=",
		`--spec={"ps":["10.0.0.1:2222"],"worker":["10.0.0.1:2223","10.0.0.2:2222"]}`,
		"--run=20260101-abc", "--on=gpu02:2222", "--gpus=0,1", "${HOME}/{x}", `{"a":{"b":1}}`}
	if !slices.Equal(w1.Argv, wantArgv) {
		t.Errorf("argv\n got %q\nwant %q", w1.Argv, wantArgv)
	}
	ps := p.Tasks[0]
	if ps.Env["CUDA_VISIBLE_DEVICES"] != "" || len(ps.GPUs) != 0 || ps.GPUs == nil {
		t.Errorf("CPU ps must hide GPUs and have gpus [] (not null): %+v", ps)
	}
	if _, ok := ps.Env["CUDA_VISIBLE_DEVICES"]; !ok {
		t.Error("CPU ps must have CUDA_VISIBLE_DEVICES set (to empty)")
	}
	if ps.Argv[2] != "--job=ps" || ps.Argv[9] != "--on=gpu01:2222" || ps.Argv[10] != "--gpus=" {
		t.Errorf("ps argv %q", ps.Argv)
	}
	if got := p.Hosts(); !slices.Equal(got, []string{"gpu01", "gpu02"}) {
		t.Errorf("Hosts() = %v", got)
	}
}

func TestMakeTFFlags(t *testing.T) {
	p, err := Make(inv(host("a", 2)), req(func(r *Request) { r.PS, r.Workers, r.TFFlags = 1, 2, true }))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"python", "train.py", "--ps_hosts=a:2222", "--worker_hosts=a:2223,a:2224", "--job_name=worker", "--task_index=1"}
	if got := p.Tasks[2].Argv; !slices.Equal(got, want) {
		t.Errorf("argv %q, want %q", got, want)
	}
}

func TestMakeEvaluator(t *testing.T) {
	p, err := Make(inv(host("a", 3)), req(func(r *Request) { r.Chief, r.Evaluator, r.Workers = true, true, 1 }))
	if err != nil {
		t.Fatal(err)
	}
	ev := p.Tasks[len(p.Tasks)-1]
	want := `{"cluster":{"chief":["a:2222"],"worker":["a:2223"]},"task":{"type":"evaluator","index":0}}`
	if ev.TFConfig != want {
		t.Errorf("evaluator TF_CONFIG\n got %s\nwant %s", ev.TFConfig, want)
	}
	if p.Evaluator != "a:2224" || ev.Address != "a:2224" {
		t.Errorf("evaluator address %q / %q", p.Evaluator, ev.Address)
	}
	if strings.Contains(p.Tasks[0].TFConfig, "evaluator") {
		t.Errorf("evaluator leaked into training cluster: %s", p.Tasks[0].TFConfig)
	}
}

func TestMakeMatrix(t *testing.T) {
	in := inv(
		host("a", 3, proc(1, "bob", 1234, "python x.py")),
		host("b", 2, unreachable("dial tcp: connection refused")),
		host("c", 2, noSMI()),
	)
	r := req(func(r *Request) { r.Exclude = Exclusions{"a": {2}} })
	p, err := Make(in, r)
	if err != nil {
		t.Fatal(err)
	}
	got := []string{}
	for _, m := range p.Matrix {
		row := m.Host + "(" + m.Note + "):"
		for _, g := range m.GPUs {
			row += " " + string(g.State) + "/" + g.Reason + "/" + g.Task
		}
		got = append(got, row)
	}
	want := []string{
		"a(): free//worker:0 busy/bob:1234 python x.py/ excluded/--exclude/",
		"b(unreachable: dial tcp: connection refused):",
		"c(no GPUs: no nvidia-smi):",
	}
	if !slices.Equal(got, want) {
		t.Errorf("matrix\n got %q\nwant %q", got, want)
	}
}

func TestMakeUsageErrors(t *testing.T) {
	in := inv(host("a", 2), host("b", 2, unreachable("timeout")))
	tests := []struct {
		name     string
		req      func(*Request)
		msg      string
		hintPart string
	}{
		{"unknown exclude host", func(r *Request) { r.Exclude = Exclusions{"z": nil} }, "--exclude z: unknown host", "known hosts: a, b"},
		{"exclude missing GPU", func(r *Request) { r.Exclude = Exclusions{"a": {7}} }, "--exclude a:7: a has no GPU 7", "a has GPUs 0,1"},
		{"unknown placeholder", func(r *Request) { r.Command = []string{"x", "--j={jobname}"} }, "unknown placeholder {jobname} in command", "did you mean {job_name}?"},
		{"tf-flags with chief", func(r *Request) { r.TFFlags, r.Chief = true, true }, "--tf-flags cannot be used with --chief", "TF_CONFIG"},
		{"no hosts", nil, "no hosts to plan on", "-H"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			i := in
			if tt.name == "no hosts" {
				i = inventory.Inventory{}
			}
			_, err := Make(i, req(tt.req))
			ue, ok := err.(*UsageError)
			if !ok {
				t.Fatalf("want *UsageError, got %T %v", err, err)
			}
			if ue.Error() != tt.msg || !strings.Contains(ue.Hint(), tt.hintPart) {
				t.Errorf("got %q hint %q, want %q hint containing %q", ue.Error(), ue.Hint(), tt.msg, tt.hintPart)
			}
		})
	}
}

func TestMakeNotEnough(t *testing.T) {
	tests := []struct {
		name    string
		inv     inventory.Inventory
		req     func(*Request)
		msg     string
		details []string
		hint    string
		asked   int
		found   int
	}{
		{
			name: "short, every reason shown",
			inv: inv(
				host("gpu01", 5, proc(2, "bob", 1234, "python"), util(3, 85), memUsed(4, 3000)),
				host("gpu02", 4, mig(0), allowed(0, 1, 2), proc(1, "", 77, ""), proc(1, "amy", 78, "x")),
				host("gpu03", 2, unreachable("ssh: connect to host gpu03 port 22: connection refused")),
				host("gpu04", 0, driverError("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver")),
			),
			req: func(r *Request) { r.Workers, r.GPUsPerWorker = 4, 2; r.Exclude = Exclusions{"gpu01": {0}} },
			msg: "not enough free GPUs: asked 8 (4 workers × 2), found 2",
			details: []string{
				"gpu01: 1 free (1); busy 2 (bob:1234 python), 3 (util 85% > 10%), 4 (mem 3000 MiB > 1024 MiB); excluded 0 (--exclude)",
				"gpu02: 1 free (2); busy 1 (?:77 +1 more); excluded 0 (MIG enabled, no MIG instances made on it), 3 (not in hosts file gpus:)",
				"gpu03: unreachable: ssh: connect to host gpu03 port 22: connection refused",
				"gpu04: no GPUs: NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver",
			},
			hint:  "ask for fewer GPUs (--workers, --gpus-per-worker), raise --max-util or --max-mem, exclude fewer GPUs, wait for busy GPUs to be released, or fix the unreachable hosts",
			asked: 8, found: 2,
		},
		{
			name: "enough in total but fragmented",
			inv:  inv(host("a", 2), host("b", 2), host("c", 2)),
			req:  func(r *Request) { r.Workers, r.GPUsPerWorker = 1, 4 },
			msg:  "not enough free GPUs on one host: asked 4 (1 worker × 4), found 6 but at most 2 free on any one host",
			details: []string{
				"a: 2 free (0,1)", "b: 2 free (0,1)", "c: 2 free (0,1)",
			},
			hint:  "a task's GPUs must be on one host: ask for 2 or fewer GPUs per task",
			asked: 4, found: 6,
		},
		{
			name:    "fragmented: each fits alone, not together",
			inv:     inv(host("a", 3), host("b", 3)),
			req:     func(r *Request) { r.Workers, r.GPUsPerWorker, r.Chief, r.Evaluator = 1, 2, true, true },
			msg:     "not enough free GPUs: asked 6 (1 worker × 2, 1 chief × 2, 1 evaluator × 2), found 6 but split across hosts so that the tasks do not fit",
			details: []string{"a: 3 free (0,1,2)", "b: 3 free (0,1,2)"},
			hint:    "ask for fewer tasks or fewer GPUs per task",
			asked:   6, found: 6,
		},
		{
			name:    "GPU ps counted",
			inv:     inv(host("a", 2, proc(0, "bob", 1, "python"), proc(1, "bob", 1, "python"))),
			req:     func(r *Request) { r.PS, r.GPUsPerPS, r.Workers = 2, 1, 1 },
			msg:     "not enough free GPUs: asked 3 (1 worker × 1, 2 ps × 1), found 0",
			details: []string{"a: 0 free; busy 0,1 (bob:1 python)"},
			hint:    "ask for fewer GPUs (--workers, --gpus-per-worker), or wait for busy GPUs to be released",
			asked:   3, found: 0,
		},
		{
			name:    "no reachable host, even for CPU tasks",
			inv:     inv(host("a", 1, unreachable("timeout")), host("b", 1, unreachable("auth"))),
			req:     func(r *Request) { r.GPUsPerWorker = 0 },
			msg:     "no reachable host: all 2 hosts failed the probe",
			details: []string{"a: unreachable: timeout", "b: unreachable: auth"},
			hint:    "fix access to the hosts below; tfhive status shows each one's state",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Make(tt.inv, req(tt.req))
			ce := assertCapacity(t, err)
			if ce.Error() != tt.msg {
				t.Errorf("msg\n got %s\nwant %s", ce.Error(), tt.msg)
			}
			if !slices.Equal(ce.Details(), tt.details) {
				t.Errorf("details\n got %q\nwant %q", ce.Details(), tt.details)
			}
			if ce.Hint() != tt.hint {
				t.Errorf("hint\n got %s\nwant %s", ce.Hint(), tt.hint)
			}
			if ce.Asked != tt.asked || ce.Found != tt.found {
				t.Errorf("asked/found %d/%d, want %d/%d", ce.Asked, ce.Found, tt.asked, tt.found)
			}
		})
	}
}

func TestMakePortsExhausted(t *testing.T) {
	in := inv(host("a", 4, addr("127.0.0.1"), listening(2222)), host("b", 4, addr("127.0.0.1")))
	_, err := Make(in, req(func(r *Request) { r.Workers, r.PortLo, r.PortHi = 3, 2222, 2224 }))
	ce := assertCapacity(t, err)
	want := "no free port for worker:2 on 127.0.0.1: --port-range 2222-2224 has 3 ports, 1 listening there and 2 given to other tasks"
	if ce.Error() != want {
		t.Errorf("got  %s\nwant %s", ce.Error(), want)
	}
	if !strings.Contains(ce.Hint(), "--port-range") || !slices.Equal(ce.Details(), []string{"127.0.0.1: hosts a, b"}) {
		t.Errorf("hint %q details %q", ce.Hint(), ce.Details())
	}
}

// A port nothing listens on is never said to listen: one held by a lock
// of somebody's (not a tfhive run's) and one whose lock file blocks it are
// named as such, with whose they are.
func TestMakePortsClaimedAndBlocked(t *testing.T) {
	h := host("a", 4, addr("127.0.0.1"), listening(2222))
	h.Claims = []inventory.Claim{
		{Kind: "port", ID: 2223, User: "mallory"},
		{Kind: "port", ID: 2224, User: "mallory", Blocked: "/tmp/tfhive-claim.port-2224.lock is a FIFO owned by mallory"},
		{Kind: "port", ID: 2225, User: "bob", RunID: "r1"},
	}
	_, err := Make(inv(h), req(func(r *Request) { r.Workers, r.PortLo, r.PortHi = 1, 2222, 2225 }))
	ce := assertCapacity(t, err)
	want := "no free port for worker:0 on 127.0.0.1: --port-range 2222-2225 has 4 ports, 1 listening there, 2 claimed, 1 blocked and 0 given to other tasks"
	if ce.Error() != want {
		t.Errorf("got  %s\nwant %s", ce.Error(), want)
	}
	details := []string{"127.0.0.1: hosts a",
		"127.0.0.1: port 2223 claimed: its lock is held by mallory, not by a tfhive run",
		"127.0.0.1: port 2224 blocked: /tmp/tfhive-claim.port-2224.lock is a FIFO owned by mallory",
		"127.0.0.1: port 2225 claimed: run r1 of bob"}
	if !slices.Equal(ce.Details(), details) {
		t.Errorf("details\n got %q\nwant %q", ce.Details(), details)
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}
