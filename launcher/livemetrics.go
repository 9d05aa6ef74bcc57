package launcher

import (
	"maps"
	"path/filepath"
	"time"

	"github.com/tfhive/tfhive/launcher/record"
	"github.com/tfhive/tfhive/launcher/rundir"
)

// A running run with --capture keeps the values captured so far in its
// log dir (rundir.LiveMetrics): {"metrics": {"loss": "0.25"}}, as the
// summary will choose them (RunMetrics), for tfhive top. Written whole or
// not at all (rundir.WriteJSON), only when a value changed, every
// liveMetricsEvery at most; the summary has the final values.

// liveMetricsEvery is how often the captured values are looked at.
const liveMetricsEvery = 2 * time.Second

// liveMetrics is rundir.LiveMetrics' document.
type liveMetrics struct {
	Metrics map[string]string `json:"metrics"`
}

// metricsTicker ticks while the run captures something; nil otherwise
// (a nil channel never ticks).
func (r *runner) metricsTicker() (<-chan time.Time, func()) {
	if c := r.o.Captures; c == nil || len(c.List) == 0 || r.o.LogDir == "" {
		return nil, func() {}
	}
	t := time.NewTicker(liveMetricsEvery)
	return t.C, t.Stop
}

// writeLiveMetrics writes the values captured so far when they changed
// since last; a failure (a full disk) is left to the summary to say.
func (r *runner) writeLiveMetrics(last map[string]string) map[string]string {
	tasks := make([]record.TaskResult, len(r.tasks))
	for i, rt := range r.tasks {
		tasks[i].ID = rt.t.ID
		if rt.out != nil {
			tasks[i].Metrics = rt.out.Metrics()
		}
	}
	m := RunMetrics(tasks, false)
	if m == nil || maps.Equal(m, last) {
		return last
	}
	if rundir.WriteJSON(filepath.Join(r.o.LogDir, rundir.LiveMetrics), liveMetrics{Metrics: m}) != nil {
		return last
	}
	return m
}
