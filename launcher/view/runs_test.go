package view

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/tfhive/tfhive/probe/testkit"
)

const runsGoldenDir = "testdata/runs"

func recordOf(id string, started time.Time, metrics ...string) RunRecord {
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
			recordOf("e", at(5), "loss", "nan"),
			recordOf("b", at(1), "loss", "10"),
			recordOf("a", at(1), "loss", " 9.5 "),
			recordOf("c", at(2)),
			recordOf("d", at(3), "loss", "1e-3"),
			recordOf("f", at(0), "loss", "diverged"),
			recordOf("g", at(4), "loss", "10"),
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
// a run lacks, long values cut, durations rounded by size; the command
// last, whole into a pipe, cut with the line on a terminal.
func TestWriteRunRecords(t *testing.T) {
	// Local, as the table shows start times in the local zone.
	t0 := time.Date(2026, 11, 20, 10, 0, 0, 0, time.Local)
	code := func(n int) *int { return &n }
	rs := []RunRecord{
		{RunID: "lr-0.1", Started: t0, Duration: 95*time.Minute + 1500*time.Millisecond, Result: "succeeded", ExitCode: code(0),
			Metrics: map[string]string{"loss": "0.25", "acc": "0.91"}, Captures: []string{"acc", "loss"},
			Command: []string{"python", "train.py", "--lr", "0.1"}},
		{RunID: "lr-1", Started: t0.Add(time.Hour), Duration: 3240 * time.Millisecond, Result: "failed", ExitCode: code(1),
			Command: []string{"sh", "-c", "echo it's \x1b[31mred; exec python train.py --lr 1 --model_dir /shared/{run_id}"},
			Metrics: map[string]string{"loss": strings.Repeat("9", 50), "note": "über " + strings.Repeat("é", 45)}},
		{RunID: "still-going", Started: t0.Add(2 * time.Hour), Result: ResultRunning, Metrics: map[string]string{}},
		{RunID: "gone", Result: ResultUnknown, Metrics: map[string]string{}},
	}
	var b bytes.Buffer
	if err := WriteRunRecords(&b, rs); err != nil {
		t.Fatal(err)
	}
	// Into a pipe the command is whole.
	testkit.Golden(t, filepath.Join(runsGoldenDir, "table.txt"), b.Bytes())
	if !strings.Contains(b.String(), "  sh -c 'echo it'\\''s ^[[31mred; exec python train.py --lr 1 --model_dir /shared/{run_id}'\n") {
		t.Errorf("into a pipe, a command was cut:\n%s", b.String())
	}
	// On a terminal every line is cut to its width, as every table's.
	for _, width := range []int{180, 200, 40} {
		b.Reset()
		if err := WriteRunRecords(OnTerminal(&b, width), rs); err != nil {
			t.Fatal(err)
		}
		testkit.Golden(t, filepath.Join(runsGoldenDir, "width-"+strconv.Itoa(width)+".txt"), b.Bytes())
		for _, line := range strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n") {
			if n := utf8.RuneCountInString(line); n > width {
				t.Errorf("width %d: a line of %d:\n%s", width, n, line)
			}
		}
	}
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
	if len(doc.Runs) != 1 || doc.Runs[0]["metrics"].(map[string]any)["loss"] != strings.Repeat("9", 50) || doc.Runs[0]["Captures"] != nil ||
		len(doc.Runs[0]["command"].([]any)) != 3 || !strings.HasSuffix(doc.Runs[0]["command"].([]any)[2].(string), "/shared/{run_id}") {
		t.Errorf("JSON: %s", b.Bytes())
	}
	b.Reset()
	if err := WriteRunRecordsJSON(&b, nil); err != nil || b.String() != "{\n  \"runs\": []\n}\n" {
		t.Errorf("no runs: %q, %v", b.String(), err)
	}
}

// Another user's run in the log root: an OWNER column says whose each
// run is ("you" for the user's own), and --json has her login as owner;
// with the user's own runs only there is no such column.
func TestWriteRunRecordsOwner(t *testing.T) {
	t0 := time.Date(2026, 11, 20, 10, 0, 0, 0, time.Local)
	code := 0
	rs := []RunRecord{
		{RunID: "mine", Started: t0, Result: "succeeded", ExitCode: &code, Metrics: map[string]string{}},
		{RunID: "her-run", Owner: "mallory", Started: t0, Result: "succeeded", ExitCode: &code, Metrics: map[string]string{}},
	}
	var b bytes.Buffer
	if err := WriteRunRecords(&b, rs); err != nil {
		t.Fatal(err)
	}
	want := `RUN      OWNER    STARTED              DURATION  RESULT     EXIT  COMMAND
mine     you      2026-11-20 10:00:00  -         succeeded  0     -
her-run  mallory  2026-11-20 10:00:00  -         succeeded  0     -
`
	if b.String() != want {
		t.Errorf("table:\n%s\nwant:\n%s", b.String(), want)
	}
	b.Reset()
	WriteRunRecords(&b, rs[:1])
	if strings.Contains(b.String(), "OWNER") {
		t.Errorf("an OWNER column for the user's own runs only:\n%s", b.String())
	}
	b.Reset()
	WriteRunRecordsJSON(&b, rs)
	var doc struct {
		Runs []map[string]any `json:"runs"`
	}
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil || len(doc.Runs) != 2 {
		t.Fatalf("JSON: %v\n%s", err, b.Bytes())
	}
	if _, ok := doc.Runs[0]["owner"]; ok || doc.Runs[1]["owner"] != "mallory" {
		t.Errorf("JSON owners: %v, %v", doc.Runs[0]["owner"], doc.Runs[1]["owner"])
	}
}

// safeWord says what the regexp it replaced said, of every byte alone,
// of words of them and of non-ASCII and invalid UTF-8.
func TestSafeWordAsTheRegexp(t *testing.T) {
	re := regexp.MustCompile(`^[A-Za-z0-9_@%+=:,./-]+$`)
	words := []string{"", "a", "a b", "i=0,1,2", "--env=K=V", "é", "\xff", "a\n", "\na", "~", "a'b", "/x/y.z", "50%", "1+2", "x\x00"}
	for c := range 256 {
		words = append(words, string([]byte{byte(c)}), "a"+string([]byte{byte(c)})+"b")
	}
	for _, w := range words {
		if got, want := safeWord(w), re.MatchString(w); got != want {
			t.Errorf("safeWord(%q) = %v, the regexp %v", w, got, want)
		}
	}
}
