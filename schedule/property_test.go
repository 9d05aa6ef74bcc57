package schedule

import (
	"errors"
	"fmt"
	"math/rand"
	"reflect"
	"testing"

	"github.com/tfhive/tfhive/probe/inventory"
)

// randomInventory builds a fleet with every feature the planner looks at:
// unreachable and GPU-less hosts, busy, hot, MIG and disallowed GPUs, shared
// addresses, listening ports inside a narrow range.
func randomInventory(rng *rand.Rand) inventory.Inventory {
	n := 1 + rng.Intn(5)
	var hs []inventory.HostInventory
	for i := range n {
		name := fmt.Sprintf("h%d", i)
		var opts []hostOpt
		switch rng.Intn(3) {
		case 0:
			opts = append(opts, addr("127.0.0.1"))
		case 1:
			opts = append(opts, addr(fmt.Sprintf("10.0.0.%d", rng.Intn(3))))
		}
		var ports []int
		for range rng.Intn(6) {
			ports = append(ports, 2222+rng.Intn(12))
		}
		opts = append(opts, listening(ports...))
		nGPU := rng.Intn(9)
		for g := range nGPU {
			switch rng.Intn(8) {
			case 0:
				opts = append(opts, proc(g, "bob", 100+g, "python"))
			case 1:
				opts = append(opts, util(g, rng.Intn(100)))
			case 2:
				opts = append(opts, memUsed(g, rng.Intn(4000)))
			case 3:
				opts = append(opts, mig(g))
			}
		}
		if rng.Intn(5) == 0 && nGPU > 0 {
			opts = append(opts, allowed(rng.Perm(nGPU)[:rng.Intn(nGPU)]...))
		}
		switch rng.Intn(8) {
		case 0:
			opts = append(opts, unreachable("timeout"))
		case 1:
			opts = append(opts, noSMI())
		}
		hs = append(hs, host(name, nGPU, opts...))
	}
	return inv(hs...)
}

func randomRequest(rng *rand.Rand, in inventory.Inventory) Request {
	return req(func(r *Request) {
		r.PS = rng.Intn(3)
		r.Workers = rng.Intn(6)
		r.Chief = rng.Intn(3) == 0 || r.Workers == 0
		r.Evaluator = rng.Intn(4) == 0
		r.GPUsPerWorker = rng.Intn(4)
		r.GPUsPerPS = rng.Intn(5) / 4 // mostly CPU ps, like real jobs
		r.Strategy = []string{StrategySpread, StrategyPack}[rng.Intn(2)]
		r.PortLo, r.PortHi = 2222, 2222+4+rng.Intn(20)
		r.MaxUtilPct = rng.Intn(60)
		r.MaxMemMiB = rng.Intn(3000)
		if rng.Intn(3) == 0 {
			h := in.Hosts[rng.Intn(len(in.Hosts))]
			if len(h.GPUs) > 0 && h.Reachable() && rng.Intn(2) == 0 {
				r.Exclude = Exclusions{h.Name: {h.GPUs[rng.Intn(len(h.GPUs))].Index}}
			} else {
				r.Exclude = Exclusions{h.Name: nil}
			}
		}
	})
}

func TestPlanProperties(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	var planned, short int
	for i := range 3000 {
		in := randomInventory(rng)
		r := randomRequest(rng, in)
		p, err := Make(in, r)
		if err != nil {
			var ce *CapacityError
			var ue *UsageError
			switch {
			case errors.As(err, &ce):
				short++
				if ce.Msg == "" || len(ce.Lines) == 0 || ce.Fix == "" {
					t.Errorf("case %d: capacity error without explanation: %#v", i, ce)
				}
			case errors.As(err, &ue):
			default:
				t.Fatalf("case %d: unexpected error %T %v", i, err, err)
			}
			continue
		}
		planned++
		t.Run(fmt.Sprint(i), func(t *testing.T) { checkPlan(t, in, p) })
		if len(p.Tasks) != r.PS+r.Workers+b2i(r.Chief)+b2i(r.Evaluator) {
			t.Errorf("case %d: %d tasks", i, len(p.Tasks))
		}
		for _, task := range p.Tasks {
			want := r.GPUsPerWorker
			if task.Role == RolePS {
				want = r.GPUsPerPS
			}
			if len(task.GPUs) != want {
				t.Errorf("case %d: %s has %d GPUs, want %d", i, task.ID, len(task.GPUs), want)
			}
			if task.Port < r.PortLo || task.Port > r.PortHi {
				t.Errorf("case %d: %s port %d outside range", i, task.ID, task.Port)
			}
		}
		if again, err := Make(in, r); err != nil || !reflect.DeepEqual(p, again) {
			t.Errorf("case %d: not deterministic", i)
		}
	}
	// Guard against a generator that only ever fails (or never does).
	if planned < 500 || short < 300 {
		t.Errorf("weak sample: %d planned, %d short", planned, short)
	}
}
