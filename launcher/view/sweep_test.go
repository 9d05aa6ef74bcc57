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

func sweepTable() SweepTable {
	code := func(n int) *int { return &n }
	util := 87.4
	row := func(id, lr, bs, result string, exit *int, d time.Duration, m map[string]string) SweepRow {
		return SweepRow{RunRecord: RunRecord{RunID: id, Result: result, ExitCode: exit, Duration: d, Metrics: m},
			Params: map[string]string{"lr": lr, "bs": bs}, GPUs: 1}
	}
	t := SweepTable{Name: "sw", Params: []string{"lr", "bs"}, Trials: []SweepRow{
		row("sw-001", "0.1", "32", "succeeded", code(0), 3200*time.Millisecond, map[string]string{"loss": "0.50"}),
		row("sw-002", "0.1", "64", "failed", code(1), 900*time.Millisecond, map[string]string{}),
		row("sw-003", "0.01", "32", "succeeded", code(0), 95*time.Second, map[string]string{"loss": "0.125", "note": "a,\"b\""}),
		row("sw-004", "0.01", "64", ResultNotRun, nil, 0, map[string]string{}),
	}}
	t.Trials[2].UtilMean = &util
	t.Trials[3].GPUs = 0
	return t
}

// The table: the parameters in --param order, the outcome, GPU use, a
// column per metric; sorted by a metric, the trials without it last.
func TestWriteSweep(t *testing.T) {
	tab := sweepTable()
	SortSweep(tab.Trials, "loss", false)
	var ids []string
	for _, r := range tab.Trials {
		ids = append(ids, r.RunID)
	}
	if !slices.Equal(ids, []string{"sw-003", "sw-001", "sw-002", "sw-004"}) {
		t.Fatalf("by loss: %v", ids)
	}
	SortSweep(tab.Trials, "loss", true)
	if tab.Trials[0].RunID != "sw-001" || tab.Trials[3].RunID != "sw-004" {
		t.Fatalf("by loss, reversed: %v", tab.Trials)
	}
	SortSweep(tab.Trials, "", false)
	var b bytes.Buffer
	if err := WriteSweep(&b, tab); err != nil {
		t.Fatal(err)
	}
	testkit.Golden(t, filepath.Join("testdata", "sweep", "table.txt"), b.Bytes())
	b.Reset()
	if err := WriteSweepCSV(&b, tab); err != nil {
		t.Fatal(err)
	}
	testkit.Golden(t, filepath.Join("testdata", "sweep", "table.csv"), b.Bytes())
	b.Reset()
	if err := WriteSweepJSON(&b, tab); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Sweep  string
		Params []string
		Trials []map[string]any
	}
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil || doc.Sweep != "sw" || len(doc.Trials) != 4 {
		t.Fatalf("JSON %v: %s", err, b.Bytes())
	}
	if p := doc.Trials[2]["params"].(map[string]any); p["lr"] != "0.01" || doc.Trials[2]["gpu_util_mean_pct"] != 87.4 {
		t.Errorf("JSON trial 3: %v", doc.Trials[2])
	}
	if strings.Contains(b.String(), "Captures") {
		t.Error("JSON has the captures")
	}
}
