package job

import (
	"fmt"
	"testing"

	"github.com/tfhive/tfhive/probe/inventory"
	"github.com/tfhive/tfhive/schedule"
)

// A run holding fewer GPUs on a host than at the last probe is ending;
// one that holds as many, or one whose host did not answer, is not; the
// waiting run's own claims never count.
func TestNoteEnding(t *testing.T) {
	claims := func(run string, n int) []inventory.Claim {
		var cs []inventory.Claim
		for i := range n {
			cs = append(cs, inventory.Claim{Kind: "gpu", ID: i, RunID: run, User: "carol"})
		}
		return cs
	}
	r := &run{req: schedule.Request{RunID: "me"}}
	probe := func(h1, h2 []inventory.Claim, h2Err bool) {
		inv := inventory.Inventory{Hosts: []inventory.HostInventory{{Name: "h1", Claims: h1}, {Name: "h2", Claims: h2}}}
		if h2Err {
			inv.Hosts[1].Err = &inventory.HostError{Message: "lost"}
		}
		r.noteEnding(inv)
	}
	probe(claims("holder", 2), append(claims("other", 1), claims("me", 1)...), false)
	probe(claims("holder", 2), nil, true) // h2 silent: not a let-go
	probe(claims("holder", 2), nil, false)
	if len(r.ending) != 0 {
		t.Fatalf("ending %v after h2 was silent, then answered", r.ending)
	}
	probe(claims("holder", 1), nil, false)
	if !r.ending[schedule.EndingKey("carol", "holder")] || len(r.ending) != 1 {
		t.Fatalf("ending %v, want holder only", r.ending)
	}
}

// A GPU claimed with no run's label is settling at the probe that first
// sees it so (a lock being taken or let go of), not at the first probe,
// nor when it stays so.
func TestNoteSettling(t *testing.T) {
	r := &run{req: schedule.Request{RunID: "me"}}
	probe := func(cs ...inventory.Claim) map[string][]int {
		r.noteEnding(inventory.Inventory{Hosts: []inventory.HostInventory{{Name: "h1", Claims: cs}}})
		return r.settling
	}
	unlabelled := func(id int) inventory.Claim { return inventory.Claim{Kind: "gpu", ID: id} }
	if s := probe(unlabelled(0)); s != nil {
		t.Fatalf("first probe: settling %v", s)
	}
	if s := probe(unlabelled(0), unlabelled(1)); fmt.Sprint(s) != "map[h1:[1]]" {
		t.Fatalf("GPU 1 newly unlabelled: settling %v, want h1's 1", s)
	}
	if s := probe(unlabelled(0), unlabelled(1)); s != nil {
		t.Fatalf("unlabelled at two probes in a row: settling %v", s)
	}
}
