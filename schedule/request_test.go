package schedule

import (
	"fmt"
	"strings"
	"testing"
)

func TestRequestValidate(t *testing.T) {
	tests := []struct {
		name string
		mod  func(*Request)
		want string // "" = valid
	}{
		{"defaults", nil, ""},
		{"cpu everything", func(r *Request) { r.GPUsPerWorker, r.PS = 0, 2 }, ""},
		{"chief only", func(r *Request) { r.Workers, r.Chief = 0, true }, ""},
		{"nothing to train", func(r *Request) { r.Workers = 0 }, "nothing to train: no workers and no chief"},
		{"negative ps", func(r *Request) { r.PS = -1 }, "--ps must be 0 or more, got -1"},
		{"negative gpus", func(r *Request) { r.GPUsPerPS = -2 }, "--gpus-per-ps must be 0 or more, got -2"},
		{"util over 100", func(r *Request) { r.MaxUtilPct = 101 }, "--max-util must be between 0 and 100, got 101"},
		{"negative mem", func(r *Request) { r.MaxMemMiB = -1 }, "--max-mem must be 0 or more, got -1"},
		{"strategy", func(r *Request) { r.Strategy = "fill" }, `unknown strategy "fill"`},
		{"ports", func(r *Request) { r.PortLo, r.PortHi = 3000, 2000 }, "bad --port-range 3000-2000"},
		{"tf-flags chief", func(r *Request) { r.TFFlags, r.Chief = true, true }, "--tf-flags cannot be used with --chief"},
		{"tf-flags evaluator", func(r *Request) { r.TFFlags, r.Evaluator = true, true }, "--tf-flags cannot be used with --evaluator"},
		{"tf-flags ps", func(r *Request) { r.TFFlags, r.PS = true, 1 }, ""},
		{"no run id", func(r *Request) { r.RunID = "" }, "no run id"},
		{"bad run id", func(r *Request) { r.RunID = "a b;rm" }, `bad run id "a b;rm"`},
		{"run id dash", func(r *Request) { r.RunID = "-x" }, `bad run id "-x"`},
		{"run id dot dot", func(r *Request) { r.RunID = ".." }, `bad run id ".."`},
		{"run id too long", func(r *Request) { r.RunID = strings.Repeat("r", 77) }, `bad run id "` + strings.Repeat("r", 77) + `"`},
		{"run id of 64", func(r *Request) { r.RunID = strings.Repeat("r", 64) }, ""},
		{"unknown placeholder", func(r *Request) { r.Command = []string{"x", "{gpu}"} }, "unknown placeholder {gpu} in command"},
		{"empty command allowed", func(r *Request) { r.Command = nil }, ""},
		{"torch", func(r *Request) { r.Framework, r.Chief, r.Workers, r.GPUsPerWorker = FrameworkTorch, true, 3, 0 }, ""},
		{"torch ps", func(r *Request) { r.Framework, r.PS = FrameworkTorch, 2 }, "--ps cannot be used with --framework torch"},
		{"framework typo", func(r *Request) { r.Framework = "pytorch" }, `unknown framework "pytorch"`},
		{"workers at the limit", func(r *Request) { r.Workers, r.GPUsPerWorker = MaxTasks, 0 }, ""},
		{"workers over the limit", func(r *Request) { r.Workers = 100_000_000 }, "--workers must be at most 65536, got 100000000"},
		{"ps over the limit", func(r *Request) { r.PS = MaxTasks + 1 }, "--ps must be at most 65536, got 65537"},
		{"tasks over the limit", func(r *Request) { r.PS, r.Workers, r.Chief = MaxTasks/2, MaxTasks/2, true },
			"65537 tasks (ps, workers, chief and evaluator): at most 65536"},
		{"gpus per worker over the limit", func(r *Request) { r.GPUsPerWorker = 1 << 40 }, "--gpus-per-worker must be at most 1024, got 1099511627776"},
		{"gpus per ps over the limit", func(r *Request) { r.PS, r.GPUsPerPS = 1, MaxGPUsPerTask+1 }, "--gpus-per-ps must be at most 1024, got 1025"},
		{"nproc-per-node over the limit", func(r *Request) { r.Framework, r.Strategy, r.RanksPerHost = FrameworkTorch, StrategyPack, MaxTasks+1 },
			"--nproc-per-node must be at most 65536, got 65537"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := req(tt.mod)
			err := r.Validate()
			if tt.want == "" {
				if err != nil {
					t.Fatalf("unexpected %v", err)
				}
				return
			}
			ue, ok := err.(*UsageError)
			if !ok || ue.Error() != tt.want {
				t.Fatalf("got %#v, want usage error %q", err, tt.want)
			}
			if strings.HasSuffix(ue.Error(), ".") || strings.ContainsRune(ue.Error(), '\n') {
				t.Errorf("message style: %q", ue.Error())
			}
		})
	}
}

func TestSetDefaults(t *testing.T) {
	r := Request{Workers: 0, GPUsPerWorker: 0, Availability: Availability{MaxUtilPct: 0}}
	r.SetDefaults()
	if r.Strategy != StrategySpread || r.PortLo != 2222 || r.PortHi != 2400 || r.Framework != FrameworkTF {
		t.Errorf("defaults not filled: %+v", r)
	}
	if r.Workers != 0 || r.GPUsPerWorker != 0 || r.MaxUtilPct != 0 {
		t.Errorf("meaningful zeros overwritten: %+v", r)
	}
	n := NewRequest()
	if n.Workers != 1 || n.GPUsPerWorker != 1 || n.PS != 0 || n.MaxUtilPct != 10 || n.MaxMemMiB != 1024 || n.Strategy != "spread" || n.Framework != "tf" {
		t.Errorf("NewRequest = %+v", n)
	}
}

func TestParsePortRange(t *testing.T) {
	tests := []struct {
		in     string
		lo, hi int
		ok     bool
	}{
		{"2222-2400", 2222, 2400, true},
		{"5000", 5000, 5000, true},
		{"1-65535", 1, 65535, true},
		{"0-10", 0, 0, false},
		{"10-65536", 0, 0, false},
		{"2400-2222", 0, 0, false},
		{"a-b", 0, 0, false},
		{"2222-", 0, 0, false},
		{"", 0, 0, false},
	}
	for _, tt := range tests {
		lo, hi, err := ParsePortRange(tt.in)
		if (err == nil) != tt.ok || lo != tt.lo || hi != tt.hi {
			t.Errorf("ParsePortRange(%q) = %d, %d, %v", tt.in, lo, hi, err)
		}
		if _, ok := err.(*UsageError); err != nil && !ok {
			t.Errorf("ParsePortRange(%q): not a usage error", tt.in)
		}
	}
}

// A ticket's shape lists the tasks in plan order: ps, chief, workers,
// evaluator.
func TestRequestShape(t *testing.T) {
	r := Request{PS: 2, GPUsPerPS: 0, Chief: true, Workers: 2, Evaluator: true, GPUsPerWorker: 3}
	if got := fmt.Sprint(r.Shape()); got != "[0 0 3 3 3 3]" {
		t.Errorf("Shape = %s, want [0 0 3 3 3 3]", got)
	}
}
