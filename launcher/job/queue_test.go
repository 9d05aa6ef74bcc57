package job

import (
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
