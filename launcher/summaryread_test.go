package launcher

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"
)

// A summary.json becomes a record; what is not one is refused in the
// file's terms, and metric names --capture could not have given are left
// out.
func TestRunRecordFromSummary(t *testing.T) {
	started := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
	sum := Summary{RunID: "ignored", Result: ResultFailed, ExitCode: 3, Reason: "worker:0 exited 3", Started: started,
		Duration: 90 * time.Second, Captures: map[string]string{"loss": `loss=(\S+)`, "x\ny": "(.)", "acc": `acc=(\S+)`},
		Metrics: map[string]string{"loss": "0.25", "\x1b[2J": "2"}}
	data, err := json.Marshal(sum)
	if err != nil {
		t.Fatal(err)
	}
	r, err := RunRecordFromSummary("lr-0.1", "/logs/lr-0.1", data)
	if err != nil {
		t.Fatal(err)
	}
	if r.RunID != "lr-0.1" || r.LogDir != "/logs/lr-0.1" || !r.Started.Equal(started) || r.Duration != 90*time.Second ||
		r.Result != ResultFailed || r.ExitCode == nil || *r.ExitCode != 3 || r.Reason != "worker:0 exited 3" {
		t.Errorf("record %+v", r)
	}
	if len(r.Metrics) != 1 || r.Metrics["loss"] != "0.25" {
		t.Errorf("metrics %q, want loss only", r.Metrics)
	}
	if !slices.Equal(r.Captures, []string{"acc", "loss"}) {
		t.Errorf("captures %q, want [acc loss]", r.Captures)
	}

	// want is the error's start: Go versions differ on how deep a field
	// they name.
	for _, c := range []struct{ name, data, want string }{
		{"cut short", `{"run_id": `, "not JSON: unexpected end of JSON input"},
		{"not JSON at all", `summary`, "not JSON: invalid character 's' looking for beginning of value"},
		{"an array", `[1, 2]`, "a JSON array, not an object"},
		{"a string", `"x"`, "a JSON string, not an object"},
		{"a metric of the wrong type", `{"result": "succeeded", "metrics": {"loss": 0.1}}`, "a JSON number in its metrics"},
		{"no result", `{}`, "no result"},
	} {
		if _, err := RunRecordFromSummary("r", "d", []byte(c.data)); err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}
