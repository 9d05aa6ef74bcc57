package supervisor

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/tfhive/tfhive/probe/claim"
)

// A requeued run's holders end their script with "#tfhive-requeued=N",
// the word before their label: bash takes it for a comment, and the
// label, read from the end, is what it was (claim.ParseHolder), with
// the count claim.Requeued reads. A run never requeued has no such word.
func TestClaimStageSaysRequeued(t *testing.T) {
	for _, n := range []int{0, 2} {
		stage := claimStage(Task{RunID: "r1", ID: "worker:0", Requeued: n})
		if got := strings.Contains(stage, claim.RequeuedWord); got != (n > 0) {
			t.Errorf("requeued %d: the stage has %s: %t", n, claim.RequeuedWord, got)
		}
		read := readStage.Text()
		if n > 0 {
			read += " " + claim.RequeuedWord + "2"
		}
		// The script still parses, the comment and all.
		if out, err := exec.Command("bash", "-n", "-c", read).CombinedOutput(); err != nil {
			t.Fatalf("requeued %d: bash -n: %v\n%s", n, err, out)
		}
		args := "flock -n -o -E 75 /proc/self/fd/4 bash --norc -c " + read + " tfhive-sup /tmp r1 worker:0 gpu:0:GPU-0 low"
		if _, run, task, claims, ok := claim.ParseHolder(args); !ok || run != "r1" || task != "worker:0" || len(claims) != 1 {
			t.Errorf("requeued %d: the label does not parse: %q", n, args)
		}
		if got := claim.Requeued(args); got != n {
			t.Errorf("requeued %d: claim.Requeued says %d", n, got)
		}
		if got := claim.Priority(args); got != "low" {
			t.Errorf("requeued %d: priority %q", n, got)
		}
	}
}
