package top

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tfhive/tfhive/launcher/rundir"
	"github.com/tfhive/tfhive/launcher/view"
)

// The user's runs: the hosts' claims of the user's own (not another
// user's, not as another login), merged with the log root's records;
// running ones first, then the latest ended, at most endedRuns of those;
// a running run's metrics are those its tfhive last wrote.
func TestMine(t *testing.T) {
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	live := t.TempDir()
	if err := os.WriteFile(filepath.Join(live, rundir.LiveMetrics), []byte(`{"metrics": {"loss": "0.5", "acc": "0.9"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	held := []view.RunOnHost{
		{RunID: "kept", User: "me", Host: "b", GPUs: []int{0, 1}, Since: at.Add(time.Minute)},
		{RunID: "kept", User: "me", Host: "a", GPUs: []int{3}, Since: at, State: "running"},
		{RunID: "hers", User: "alice", Host: "a", GPUs: []int{1}},
		{RunID: "asroot", User: "root", Host: "b", GPUs: []int{2}},
		{User: "me", Host: "a", GPUs: []int{2}}, // no tfhive label
	}
	login := map[string]string{"a": "me", "b": "me"}
	recs := []view.RunRecord{{RunID: "here", Result: view.ResultRunning, LogDir: live, Started: at.Add(time.Hour)}}
	for i := range endedRuns + 2 {
		recs = append(recs, view.RunRecord{RunID: fmt.Sprintf("ended-%d", i), Result: "succeeded", Started: at.Add(time.Duration(i) * time.Minute),
			Metrics: map[string]string{"loss": fmt.Sprint(i)}})
	}
	runs := Mine(held, login, recs)
	var ids []string
	for _, r := range runs {
		ids = append(ids, r.ID)
	}
	if got := strings.Join(ids, " "); got != "here kept ended-6 ended-5 ended-4 ended-3 ended-2" {
		t.Fatalf("runs: %s", got)
	}
	if k := runs[1]; !k.Live || k.GPUs != 3 || strings.Join(k.Hosts, ",") != "a,b" || !k.Since.Equal(at) || k.State != "running" {
		t.Errorf("kept: %+v", k)
	}
	if h := runs[0]; h.Live || h.Metric != "acc=0.9 loss=0.5" || h.State != view.ResultRunning || h.LogDir != live {
		t.Errorf("here: %+v", h)
	}
	if e := runs[2]; e.Live || e.Metric != "loss=6" || e.State != "succeeded" {
		t.Errorf("ended-6: %+v", e)
	}
}
