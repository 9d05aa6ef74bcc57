package schedule

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/tfhive/tfhive/probe/inventory"
)

func TestClassify(t *testing.T) {
	in := inv(
		host("a", 8,
			proc(0, "bob", 1234, "python   train.py\n--lr 1"),
			proc(1, "", 5, ""), proc(1, "amy", 6, "x"), proc(1, "cy", 7, "y"),
			util(2, 11), memUsed(3, 2000), util(4, 10), memUsed(5, 1024), mig(6),
			util(7, 99), memUsed(7, 9999)),
		host("b", 3, allowed(0, 2), proc(1, "bob", 1, "p")),
		host("c", 2, unreachable("refused")),
		host("d", 2, util(0, 50)),
		host("e", 1, proc(0, "bob", 9, "python /home/bob/a/very/long/path/to/the/training/script.py --flag")),
	)
	got := Classify(in, Availability{MaxUtilPct: 10, MaxMemMiB: 1024, Exclude: Exclusions{"a": {7}, "d": nil}})
	want := [][]GPUStatus{
		{
			{0, Busy, "bob:1234 python train.py --lr 1"},
			{1, Busy, "?:5 +2 more"},
			{2, Busy, "util 11% > 10%"},
			{3, Busy, "mem 2000 MiB > 1024 MiB"},
			{4, Free, ""},
			{5, Free, ""},
			{6, Excluded, ReasonMIGNoInstances},
			{7, Excluded, "--exclude"}, // excluded wins over busy: waiting will not free it
		},
		{{0, Free, ""}, {1, Excluded, "not in hosts file gpus:"}, {2, Free, ""}},
		nil,
		{{0, Excluded, "--exclude"}, {1, Excluded, "--exclude"}},
		{{0, Busy, "bob:9 python /home/bob/a/very/long/path/to/th…"}},
	}
	if !reflect.DeepEqual(got, want) {
		for i := range want {
			if !reflect.DeepEqual(got[i], want[i]) {
				t.Errorf("host %d\n got %v\nwant %v", i, got[i], want[i])
			}
		}
	}
	both := Classify(inv(host("a", 1, util(0, 50), memUsed(0, 5000))), Availability{MaxUtilPct: 10, MaxMemMiB: 1024})
	if r := both[0][0].Reason; r != "util 50% > 10%, mem 5000 MiB > 1024 MiB" {
		t.Errorf("both thresholds: %q", r)
	}
}

func TestClassifyIntruder(t *testing.T) {
	h := host("a", 2, proc(0, "bob", 10, "python train.py"), proc(0, "eve", 11, "mine"), proc(1, "eve", 12, "x"))
	h.GPUs[0].Processes[1].Intruder = true
	h.GPUs[1].Processes[0].Intruder = true // not claimed: only busy
	h.Claims = []inventory.Claim{{Kind: "gpu", ID: 0, RunID: "r1", User: "bob", Task: "worker:0", PID: 9}}
	got := Classify(inv(h), Availability{MaxUtilPct: 10, MaxMemMiB: 1024})[0]
	want := []GPUStatus{
		{0, Intruder, "eve:11 mine on the GPU of run r1 (bob, worker:0)"},
		{1, Busy, "eve:12 x"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v\nwant %v", got, want)
	}
}

// Two GPUs that nvidia-smi gives one UUID are both excluded, saying so:
// claims, named by UUID, could not tell them apart.
func TestClassifySameUUID(t *testing.T) {
	h := host("a", 3)
	h.GPUs[0].UUID, h.GPUs[1].UUID, h.GPUs[2].UUID = "GPU-same", "GPU-same", "GPU-other"
	got := Classify(inv(h), Availability{MaxUtilPct: 10, MaxMemMiB: 1024})[0]
	want := []GPUStatus{
		{0, Excluded, "nvidia-smi gives GPU 1 the same UUID (GPU-same): a claim could not tell them apart"},
		{1, Excluded, "nvidia-smi gives GPU 0 the same UUID (GPU-same): a claim could not tell them apart"},
		{2, Free, ""},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v\nwant %v", got, want)
	}
}

// A hostfile's slots=N keeps N free GPUs of the host and excludes the
// rest; busy GPUs do not count against the cap.
func TestClassifySlots(t *testing.T) {
	h := host("a", 4, util(0, 90))
	h.Host.Slots = 2
	got := Classify(inv(h, host("b", 2)), Availability{MaxUtilPct: 10, MaxMemMiB: 1024})
	want := [][]GPUStatus{
		{{0, Busy, "util 90% > 10%"}, {1, Free, ""}, {2, Free, ""}, {3, Excluded, "beyond the hostfile's slots=2"}},
		{{0, Free, ""}, {1, Free, ""}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %v\nwant %v", got, want)
	}
}

// A plan takes at most slots=N GPUs of a host, packing or not.
func TestMakeSlots(t *testing.T) {
	a := host("a", 4)
	a.Host.Slots = 2
	p, err := Make(inv(a, host("b", 2)), req(func(r *Request) { r.Workers, r.Strategy = 4, StrategyPack }))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, task := range p.Tasks {
		got[task.Host] += len(task.GPUs)
	}
	if got["a"] != 2 || got["b"] != 2 {
		t.Errorf("GPUs by host %v, want a:2 (slots=2) b:2: %s", got, layout(p))
	}
	if _, err := Make(inv(a), req(func(r *Request) { r.Workers = 3 })); err == nil || !strings.Contains(err.Error(), "found 2") {
		t.Errorf("3 workers on slots=2: %v", err)
	}
}

// torchrun's --nproc-per-node K: every host used holds exactly K ranks; a
// host with fewer free GPUs is passed over, though packing would have
// used it.
func TestMakeRanksPerHost(t *testing.T) {
	in := inv(host("a", 3, util(0, 90)), host("b", 4), host("c", 2))
	p, err := Make(in, req(func(r *Request) {
		r.Framework, r.Workers, r.Strategy, r.RanksPerHost = FrameworkTorch, 4, StrategyPack, 2
	}))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, task := range p.Tasks {
		got[task.Host]++
	}
	if len(got) != 2 || slices.ContainsFunc(slices.Collect(maps.Values(got)), func(n int) bool { return n != 2 }) {
		t.Errorf("ranks by host %v, want 2 on each of two hosts: %s", got, layout(p))
	}
	_, err = Make(inv(host("a", 3, util(0, 90)), host("b", 1)), req(func(r *Request) {
		r.Framework, r.Workers, r.Strategy, r.RanksPerHost = FrameworkTorch, 4, StrategyPack, 2
	}))
	if err == nil || !strings.Contains(err.Error(), "not enough free GPUs") {
		t.Errorf("two hosts of 2 and 1 free for 2×2: %v", err)
	}
	for _, r := range []Request{
		req(func(r *Request) { r.Workers, r.RanksPerHost = 2, 2 }),
		req(func(r *Request) { r.Framework, r.Workers, r.RanksPerHost = FrameworkTorch, 2, 2 }), // spread
	} {
		if err := r.Validate(); err == nil {
			t.Errorf("%+v: valid", r)
		}
	}
}

// The matrix says free, not excluded, for a GPU a host has free that the
// plan leaves because of the run's own shape (--nproc-per-node, a
// hostfile's slots=N), with why; a GPU --exclude took out stays
// excluded. Before, every one of them read "excl".
func TestMatrixLeftFree(t *testing.T) {
	a := host("a", 4)
	a.Host.Slots = 1
	p, err := Make(inv(a, host("b", 4)), req(func(r *Request) {
		r.Framework, r.Workers, r.Strategy, r.RanksPerHost = FrameworkTorch, 2, StrategyPack, 2
		r.Availability.Exclude = Exclusions{"b": {3}}
	}))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	for _, h := range p.Matrix {
		for _, g := range h.GPUs {
			got[h.Host] = append(got[h.Host], fmt.Sprintf("%s %s %s", g.Task, g.State, g.Reason))
		}
	}
	want := map[string][]string{
		"a": {" free host has fewer than the 2 free GPUs --nproc-per-node 2 needs", " free beyond the hostfile's slots=1", " free beyond the hostfile's slots=1", " free beyond the hostfile's slots=1"},
		"b": {"worker:0 free ", "worker:1 free ", " free beyond --nproc-per-node 2", " excluded --exclude"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("matrix\n got %q\nwant %q", got, want)
	}
}
