package inventory

import "time"

// IdleRule is the idle rule a run's tasks on one host are held to
// (schedule.IdleRules: the host's policy, made stricter by --idle-stop):
// a task's GPUs all at or under Below percent for Warn are warned about,
// for Stop the run is stopped. Zero Warn or Stop: no warning, no stop.
// By says who set the stop, for the line that says why.
type IdleRule struct {
	Below      int
	Warn, Stop time.Duration
	By         string
}

// Any says whether the rule warns or stops at all.
func (r IdleRule) Any() bool { return r.Warn > 0 || r.Stop > 0 }
