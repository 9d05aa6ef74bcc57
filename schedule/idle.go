package schedule

import (
	"time"

	"github.com/tfhive/tfhive/probe/inventory"
)

// DefaultIdleBelow is the utilisation (%) at or under which a GPU is
// idle for a run's --idle-stop on a host whose policy says no idle rule:
// nvidia-smi's utilisation of a GPU that only holds memory reads 0 to a
// few percent.
const DefaultIdleBelow = 5

// IdleRules is, by host, the idle rule a run's tasks are held to there:
// the host's policy (everyone's runs), made stricter by the run's own
// stop (--idle-stop; 0: none), never looser: the sooner stop wins. A
// warning comes before a stop: the policy's when it is sooner, else at
// half the stop. Hosts with no rule are absent.
func IdleRules(inv inventory.Inventory, userStop time.Duration) map[string]inventory.IdleRule {
	out := map[string]inventory.IdleRule{}
	for _, h := range inv.Hosts {
		var r inventory.IdleRule
		r.Below = DefaultIdleBelow
		if p := h.Policy; p != nil && p.Idle != nil {
			r = inventory.IdleRule{Below: int(p.Idle.Below), Warn: p.Idle.Warn.D(), Stop: p.Idle.Stop.D()}
			if r.Stop > 0 {
				r.By = "the host's idle policy (" + p.File + ")"
			}
		}
		if userStop > 0 && (r.Stop == 0 || userStop < r.Stop) {
			r.Stop, r.By = userStop, "--idle-stop "+userStop.String()
		}
		if r.Stop > 0 && (r.Warn == 0 || r.Warn >= r.Stop) {
			r.Warn = r.Stop / 2
		}
		if r.Any() {
			out[h.Name] = r
		}
	}
	return out
}

// IdleEvery is how often a host's supervisor samples a task's GPUs for
// the rule: a quarter of its shortest time, between a quarter of a
// second and a minute (one nvidia-smi a minute per task, for a policy
// in hours).
func IdleEvery(r inventory.IdleRule) time.Duration {
	d := r.Stop
	if r.Warn > 0 && (d == 0 || r.Warn < d) {
		d = r.Warn
	}
	return min(max(d/4, 250*time.Millisecond), time.Minute)
}
