package schedule

import (
	"testing"

	"github.com/tfhive/tfhive/probe/inventory"
)

// Who may preempt a low run, by host, with the host's GPUs for the watch
// to weigh a request's need: none for other priorities, nor where the
// policy does not allow preempt_low.
func TestPreemptibleBy(t *testing.T) {
	anyone, named, off := host("a", 4), host("b", 2), host("c", 2)
	anyone.Policy = &inventory.Policy{PreemptLow: true}
	named.Policy = &inventory.Policy{PreemptLow: true, High: &inventory.PolicyWho{Users: []string{"alice", "b@d"}, Groups: []string{"ml"}}}
	off.Policy = &inventory.Policy{}
	inv := inventory.Inventory{Hosts: []inventory.HostInventory{anyone, named, off}}
	got := PreemptibleBy(inv, PriorityLow)
	want := map[string]string{"a": "* n:4", "b": "u:alice g:ml n:2"}
	if len(got) != len(want) || got["a"] != want["a"] || got["b"] != want["b"] {
		t.Errorf("PreemptibleBy: %q, want %q", got, want)
	}
	if got := PreemptibleBy(inv, PriorityNormal); got != nil {
		t.Errorf("a normal run: %q", got)
	}
}
