package commands

import (
	"testing"

	"github.com/tfhive/tfhive/probe/inventory"
	"github.com/tfhive/tfhive/schedule"
)

// A run requeued (preempted, or --requeue-on) says so first in queue's WHY, with
// the start it waits for; a run never requeued says only why it waits.
func TestQueueWhySaysRequeued(t *testing.T) {
	for _, c := range []struct {
		requeued int
		why      string
		want     string
	}{
		{0, "needs 2 GPUs", "needs 2 GPUs"},
		{1, "needs 2 GPUs", "requeued (attempt 2); needs 2 GPUs"},
		{2, "", "requeued (attempt 3)"},
	} {
		e := schedule.QueueEntry{Ticket: inventory.Ticket{RunID: "r", Requeued: c.requeued}, Why: c.why}
		if got := queueWhy(e); got != c.want {
			t.Errorf("requeued %d: %q, want %q", c.requeued, got, c.want)
		}
	}
}
