package probe

import "github.com/tfhive/tfhive/probe/inventory"

// checkIdle holds a policy's idle rule to sense: it warns or stops (a
// rule that does neither is a typo), and warns before it stops.
func checkIdle(r *inventory.PolicyIdle, bad func(why string, path ...any) error) error {
	switch {
	case r == nil:
		return nil
	case r.Warn == 0 && r.Stop == 0:
		return bad("idle: needs warn or stop (a duration such as 30m)", "idle")
	case r.Warn != 0 && r.Stop != 0 && r.Warn >= r.Stop:
		return bad("idle: warn must be shorter than stop", "idle", "stop")
	}
	return nil
}
