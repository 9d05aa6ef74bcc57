package supervisor

import (
	"bytes"
	"testing"
)

// The preemption and cancellation lines come out of the stream wherever
// the writes split them, and say what they say; a line with another mark
// (the task's own) is output.
func TestPreemptTap(t *testing.T) {
	for _, c := range []struct {
		in                 string
		out                string
		cancelled, preempt bool
	}{
		{"a\n@@tfhive-cancelled M kill\n", "a\n", true, false},
		{"a\n@@tfhive-preempted M hi bob\n", "a\n", false, true},
		{"a\n@@tfhive-cancelled X kill\n", "a\n@@tfhive-cancelled X kill\n", false, false},
		{"partial@@tfhive-cancelled M kill\nafter", "partialafter", true, false},
		{"@@tfhive-cancel", "@@tfhive-cancel", false, false},
	} {
		for split := 1; split <= len(c.in); split++ {
			var out bytes.Buffer
			var rec Preemption
			tap := NewPreemptTap(&out, "M", &rec)
			for s := c.in; s != ""; {
				n := min(split, len(s))
				tap.Write([]byte(s[:n]))
				s = s[n:]
			}
			tap.Flush()
			_, _, preempted := rec.Get()
			if out.String() != c.out || rec.Cancelled() != c.cancelled || preempted != c.preempt {
				t.Errorf("%q in writes of %d: out %q, cancelled %v, preempted %v", c.in, split, out.String(), rec.Cancelled(), preempted)
			}
		}
	}
}
