package job

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/tfhive/tfhive/launcher"
	"github.com/tfhive/tfhive/launcher/lifecycle"
	"github.com/tfhive/tfhive/launcher/record"
	"github.com/tfhive/tfhive/probe/hosttest"
	"github.com/tfhive/tfhive/probe/inventory"
)

// A plan on an older probe (a sweep's trial on the Coalescer's seed)
// gives its supervisors the waiting tickets that probe saw, by host; a
// start refused because a run queued since plans again on the next probe,
// which gives them none to check, and the wait between says no place in a
// queue the older probe may not have seen as it is.
func TestSeededPlanCarriesItsTickets(t *testing.T) {
	f := newTestFleet(t, hosttest.Profile{Name: "a", GPUs: 2})
	f.edit = func(n int, inv *inventory.Inventory) {
		if n == 1 {
			inv.Seeded = true
			inv.Hosts[0].Tickets = []inventory.Ticket{{RunID: "colleague", User: "bob", PID: 4242, Priority: "normal", Rank: 1, Shape: []int{1}}}
		}
	}
	j := newTestJob(t, f, "trial-1", 1)
	j.spec.WaitForever = true
	s := &starts{answers: []func(launcher.Options) (*record.Summary, error){
		func(launcher.Options) (*record.Summary, error) {
			return nil, &lifecycle.QueuedSinceError{Hosts: []string{"a"}}
		},
		succeeded,
	}}
	var waits []Waiting
	sum, err := Run(context.Background(), j.spec, Hooks{Start: s.start, Waiting: func(w Waiting) { waits = append(waits, w) }})
	if err != nil || sum == nil || sum.Result != record.ResultSucceeded {
		t.Fatalf("run: %+v, %v", sum, err)
	}
	if s.n() != 2 || f.probes != 2 {
		t.Fatalf("starts %d, probes %d; want 2, 2", s.n(), f.probes)
	}
	if got := s.calls[0].SeenTickets; !slices.Equal(got["a"], []int{4242}) {
		t.Errorf("the seeded start's tickets: %v, want a: [4242]", got)
	}
	if got := s.calls[1].SeenTickets; got != nil {
		t.Errorf("the start on the run's own probe: tickets %v, want none (no check)", got)
	}
	if len(waits) != 1 || !errors.As(waits[0].Err, new(*lifecycle.QueuedSinceError)) || waits[0].Queued || len(waits[0].Ahead) != 0 {
		t.Errorf("waits %+v: want one, for the queue seen since, with no place in it", waits)
	}
}
