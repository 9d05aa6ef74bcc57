package top

import (
	"encoding/json"
	"path/filepath"
	"sort"
	"strings"

	"github.com/tfhive/tfhive/launcher/rundir"
	"github.com/tfhive/tfhive/launcher/view"
	"github.com/tfhive/tfhive/probe/localfile"
)

// endedRuns is how many of the log root's ended runs top lists, the
// latest: what just failed is worth a look, a sweep's hundred are not.
const endedRuns = 5

// Mine are the user's runs: those holding claims on the hosts (held,
// hostops.Runs of a probe) as the user each host is logged in as
// (login, by host), and those of the local log root (recs: the running
// ones and the latest that ended), newest first, running ones before
// ended ones. A running run's metrics are those its tfhive last wrote
// (rundir.LiveMetrics).
func Mine(held []view.RunOnHost, login map[string]string, recs []view.RunRecord) []Run {
	byID := map[string]*Run{}
	var order []*Run
	get := func(id string) *Run {
		r := byID[id]
		if r == nil {
			r = &Run{ID: id}
			byID[id] = r
			order = append(order, r)
		}
		return r
	}
	for _, h := range held {
		if h.RunID == "" || h.User != login[h.Host] {
			continue
		}
		r := get(h.RunID)
		r.Live = true
		r.Hosts = append(r.Hosts, h.Host)
		r.GPUs += len(h.GPUs)
		if r.State == "" || h.State != "" {
			r.State = h.State
		}
		if h.Idle != "" {
			r.Idle = h.Idle
		}
		r.Requeued = max(r.Requeued, h.Requeued)
		if r.Since.IsZero() || h.Since.Before(r.Since) && !h.Since.IsZero() {
			r.Since = h.Since
		}
	}
	view.SortRunRecords(recs, "", true) // the latest first
	ended := 0
	for _, rec := range recs {
		running := rec.Result == view.ResultRunning
		if _, held := byID[rec.RunID]; !held && !running {
			if ended >= endedRuns {
				continue
			}
			ended++
		}
		r := get(rec.RunID)
		r.LogDir = rec.LogDir
		if !rec.Started.IsZero() {
			r.Since = rec.Started
		}
		if !r.Live || rec.Result != view.ResultRunning || r.State == "" {
			r.State = rec.Result // the log root's word, unless the hosts say more of a running run
		}
		r.Metric = metricLine(rec.Metrics)
		if running {
			r.Metric = metricLine(liveMetrics(rec.LogDir))
		}
	}
	for _, r := range order {
		if r.State == "" {
			r.State = view.ResultRunning
		}
	}
	sort.SliceStable(order, func(i, j int) bool {
		a, b := order[i], order[j]
		aOn, bOn := a.Live || a.State == view.ResultRunning, b.Live || b.State == view.ResultRunning
		if aOn != bOn {
			return aOn
		}
		return a.Since.After(b.Since)
	})
	runs := make([]Run, len(order))
	for i, r := range order {
		sort.Strings(r.Hosts)
		runs[i] = *r
	}
	return runs
}

// metricLine is a run's metrics as top shows them: "acc=0.91 loss=0.25".
func metricLine(m map[string]string) string {
	var parts []string
	for k, v := range m {
		parts = append(parts, k+"="+v)
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}

// liveMetrics are a running run's latest captured values, as its tfhive
// last wrote them (rundir.LiveMetrics); nil when there are none.
func liveMetrics(dir string) map[string]string {
	data, err := localfile.Read(filepath.Join(dir, rundir.LiveMetrics), liveMetricsMax)
	if err != nil {
		return nil
	}
	var doc struct {
		Metrics map[string]string `json:"metrics"`
	}
	if json.Unmarshal(data, &doc) != nil {
		return nil
	}
	return doc.Metrics
}

// liveMetricsMax bounds what is read of metrics.json: a few captured
// values, bounded as a run's summary.json is, so that a file that is not
// one does not fill memory.
const liveMetricsMax = 16 << 20
