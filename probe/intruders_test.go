package probe

import (
	"testing"

	"github.com/tfhive/tfhive/probe/inventory"
)

func TestMarkIntruders(t *testing.T) {
	anc := parseAncestors([]byte("  100 alice python train.py\na 100 90 80 70 1\na 200 150 1\na 300\na 400 80 1\na x 1\n"))
	if len(anc) != 4 || len(anc[300]) != 0 || anc[100][1] != 80 {
		t.Fatalf("parseAncestors = %v", anc)
	}
	gpus := []inventory.GPU{
		{Index: 0, Processes: []inventory.Process{{PID: 100}, {PID: 200}, {PID: 300}}},
		{Index: 1, Processes: []inventory.Process{{PID: 200}}},             // not claimed
		{Index: 2, Processes: []inventory.Process{{PID: 400}}},             // claimed with no label
		{Index: 3, Processes: []inventory.Process{{PID: 200}, {PID: 400}}}, // holder 80 in 400's chain
	}
	claims := []inventory.Claim{
		{Kind: "gpu", ID: 0, RunID: "r1", PID: 80},
		{Kind: "gpu", ID: 2, PID: 80},
		{Kind: "gpu", ID: 3, RunID: "r1", PID: 80},
		{Kind: "port", ID: 1, RunID: "r1", PID: 200},
	}
	markIntruders(gpus, claims, anc, nil)
	want := map[[2]int]bool{{0, 200}: true, {3, 200}: true}
	for _, g := range gpus {
		for _, p := range g.Processes {
			if p.Intruder != want[[2]int{g.Index, p.PID}] {
				t.Errorf("GPU %d pid %d: intruder %v, want %v", g.Index, p.PID, p.Intruder, !p.Intruder)
			}
		}
	}
}

// On a GPU a reservation holds now and no run claims, every process is
// one started outside tfhive: an intruder; on a reserved GPU a run claims,
// the run's own are not.
func TestMarkIntrudersReserved(t *testing.T) {
	anc := parseAncestors([]byte("a 100 90 1\na 200 80 1\n"))
	gpus := []inventory.GPU{
		{Index: 0, Processes: []inventory.Process{{PID: 100}}},
		{Index: 1, Processes: []inventory.Process{{PID: 200}}},
		{Index: 2, Processes: []inventory.Process{{PID: 100}}}, // not reserved
	}
	claims := []inventory.Claim{{Kind: "gpu", ID: 1, RunID: "r1", PID: 80}}
	markIntruders(gpus, claims, anc, func(g int) bool { return g < 2 })
	for i, want := range []bool{true, false, false} {
		if got := gpus[i].Processes[0].Intruder; got != want {
			t.Errorf("GPU %d: intruder %v, want %v", i, got, want)
		}
	}
}
