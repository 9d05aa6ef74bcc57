package csvlog

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfhive/tfhive/launcher/record"
	"github.com/tfhive/tfhive/launcher/rundir"
)

// At most EventsMaxRows events, then one saying more were not.
func TestTimelineBounded(t *testing.T) {
	path := filepath.Join(t.TempDir(), rundir.Events)
	tl := NewEvents(path, false)
	for range EventsMaxRows + 5 {
		tl.Add("worker:0", "h1", record.EventStart, "line one\nline two")
	}
	tl.Close()
	tl.Add("worker:0", "h1", record.EventExit, "after close")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(lines) != EventsMaxRows+2 || !strings.HasSuffix(lines[1], ",worker:0,h1,start,line one") ||
		!strings.HasSuffix(lines[len(lines)-1], ",,,truncated,more events were not recorded") {
		t.Errorf("%d lines: %q … %q", len(lines), lines[1], lines[len(lines)-1])
	}
}

// The subscriber is told every row as written, until Close, even where
// events.csv cannot be written.
func TestEventsSubscriber(t *testing.T) {
	for _, path := range []string{filepath.Join(t.TempDir(), rundir.Events), filepath.Join(t.TempDir(), "no", "such", rundir.Events)} {
		tl := NewEvents(path, false)
		var got []string
		tl.Subscribe(func(task, host, event, detail string) { got = append(got, task+","+host+","+event+","+detail) })
		tl.Add("worker:0", "h1", "idle-warning", "GPUs idle\nmore")
		tl.Add("", "", "hang", "no progress")
		tl.Close()
		tl.Add("", "", "exit", "after close")
		if strings.Join(got, ";") != "worker:0,h1,idle-warning,GPUs idle;,,hang,no progress" {
			t.Errorf("%s: the subscriber was told %q", path, got)
		}
	}
}
