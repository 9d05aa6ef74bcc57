package lifecycle

import (
	"strings"
	"testing"
	"time"

	"github.com/tfhive/tfhive/launcher/record"
	"github.com/tfhive/tfhive/schedule/scheduletest"
)

// A hang stops every task as a timeout does, with its own result and
// code; a run already decided keeps its end.
func TestHungStopsTheRun(t *testing.T) {
	p := New(scheduletest.TF("worker:0@h1", "worker:1@h2"), Restart{})
	for i := range 2 {
		p.Apply(Event{Kind: EvStarted, Task: i})
		p.Apply(claimLine(i, held))
	}
	d := p.Apply(Event{Kind: EvHung, After: 2 * time.Second, Err: "stacks in logs/stacks"})
	if d.Send != CtlTerm || len(d.To) != 2 || !d.ArmKill {
		t.Fatalf("decision %+v, want SIGTERM to both", d)
	}
	for i := range 2 {
		p.Apply(Event{Kind: EvExited, Task: i, Code: 143, Signalled: true})
	}
	result, code, reason, _ := p.Final()
	if result != record.ResultHung || code != record.ExitHung || !strings.Contains(reason, "for 2s; stacks in logs/stacks") {
		t.Errorf("final %s %d %q", result, code, reason)
	}
	if d := p.Apply(Event{Kind: EvHung, After: time.Second}); len(d.To) != 0 {
		t.Errorf("a second hang: %+v", d)
	}
}
