package lifecycle

import (
	"fmt"

	"github.com/tfhive/tfhive/launcher/record"
)

// hung stops the run as hung (--on-hang stop): every task is stopped as
// for a timeout, the run's result is record.ResultHung and its code
// record.ExitHung. Err says where the stacks are. A run already decided
// keeps its own end.
func (p *Policy) hung(ev Event, d *Decision) {
	reason := fmt.Sprintf("no task printed anything for %s", ev.After)
	if ev.Err != "" {
		reason += "; " + ev.Err
	}
	p.decide(d, record.ResultHung, record.ExitHung, -1, reason)
}

// Between says the task's attempt has ended and it waits for its
// restart (its backoff, or the group's): silent by design, which
// --hang-after must not take for a hang.
func (s TaskState) Between() bool { return s.between }
