package view

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tfhive/tfhive/probe/testkit"
)

const runsGoldenDir = "testdata/runs"

func record(id string, started time.Time, metrics ...string) RunRecord {
	r := RunRecord{RunID: id, Started: started, Metrics: map[string]string{}}
	for i := 0; i+1 < len(metrics); i += 2 {
		r.Metrics[metrics[i]] = metrics[i+1]
	}
	return r
}

func ids(rs []RunRecord) []string {
	var l []string
	for _, r := range rs {
		l = append(l, r.RunID)
	}
	return l
}

// By start then id; by a metric, numbers (numerically) before text before
// none, ties by start; reverse turns numbers and text around, never where
// the runs without a value go.
func TestSortRunRecords(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }
	all := func() []RunRecord {
		return []RunRecord{
			record("e", at(5), "loss", "nan"),
			record("b", at(1), "loss", "10"),
			record("a", at(1), "loss", " 9.5 "),
			record("c", at(2)),
			record("d", at(3), "loss", "1e-3"),
			record("f", at(0), "loss", "diverged"),
			record("g", at(4), "loss", "10"),
		}
	}
	for _, c := range []struct {
		metric  string
		reverse bool
		want    []string
	}{
		{"", false, []string{"f", "a", "b", "c", "d", "g", "e"}},
		{"", true, []string{"e", "g", "d", "c", "b", "a", "f"}},
		// "nan" is text: it has no place among numbers.
		{"loss", false, []string{"d", "a", "b", "g", "f", "e", "c"}},
		{"loss", true, []string{"b", "g", "a", "d", "e", "f", "c"}},
		{"acc", true, []string{"f", "a", "b", "c", "d", "g", "e"}},
	} {
		rs := all()
		SortRunRecords(rs, c.metric, c.reverse)
		if got := ids(rs); !slices.Equal(got, c.want) {
			t.Errorf("by %q reverse %v: %q, want %q", c.metric, c.reverse, got, c.want)
		}
	}
}

// The table: a column per metric any run has or asked for, "-" for what
// a run lacks, long values cut, durations rounded by size.
func TestWriteRunRecords(t *testing.T) {
	// Local, as the table shows start times in the local zone.
	t0 := time.Date(2026, 11, 20, 10, 0, 0, 0, time.Local)
	code := func(n int) *int { return &n }
	rs := []RunRecord{
		{RunID: "lr-0.1", Started: t0, Duration: 95*time.Minute + 1500*time.Millisecond, Result: "succeeded", ExitCode: code(0),
			Metrics: map[string]string{"loss": "0.25", "acc": "0.91"}, Captures: []string{"acc", "loss"}},
		{RunID: "lr-1", Started: t0.Add(time.Hour), Duration: 3240 * time.Millisecond, Result: "failed", ExitCode: code(1),
			Metrics: map[string]string{"loss": strings.Repeat("9", 50), "note": "über " + strings.Repeat("é", 45)}},
		{RunID: "still-going", Started: t0.Add(2 * time.Hour), Result: ResultRunning, Metrics: map[string]string{}},
		{RunID: "gone", Result: ResultUnknown, Metrics: map[string]string{}},
	}
	var b bytes.Buffer
	if err := WriteRunRecords(&b, rs); err != nil {
		t.Fatal(err)
	}
	testkit.Golden(t, filepath.Join(runsGoldenDir, "table.txt"), b.Bytes())
	if got := MetricNames(rs); !slices.Equal(got, []string{"acc", "loss", "note"}) {
		t.Errorf("metric names %q", got)
	}

	// JSON has the whole values, and no captures.
	b.Reset()
	if err := WriteRunRecordsJSON(&b, rs[1:2]); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Runs []map[string]any `json:"runs"`
	}
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Runs) != 1 || doc.Runs[0]["metrics"].(map[string]any)["loss"] != strings.Repeat("9", 50) || doc.Runs[0]["Captures"] != nil {
		t.Errorf("JSON: %s", b.Bytes())
	}
	b.Reset()
	if err := WriteRunRecordsJSON(&b, nil); err != nil || b.String() != "{\n  \"runs\": []\n}\n" {
		t.Errorf("no runs: %q, %v", b.String(), err)
	}
}
