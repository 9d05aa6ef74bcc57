package lifecycle

import (
	"testing"

	"github.com/tfhive/tfhive/launcher/record"
)

// A preempted run ends as preempted, exit 5, naming who preempted it
// when the session said so.
func TestPreempted(t *testing.T) {
	for _, c := range []struct{ run, user, want string }{
		{"hi", "eve", "task worker:0 on h1 was preempted by run hi of eve (--priority high)"},
		{"-", "-", "task worker:0 on h1 was preempted by a --priority high run"},
	} {
		result, code, reason := Preempted("worker:0", "h1", c.run, c.user)
		if result != record.ResultPreempted || code != record.ExitPreempted || reason != c.want {
			t.Errorf("Preempted(%q, %q) = %q, %d, %q; want %q", c.run, c.user, result, code, reason, c.want)
		}
	}
}
