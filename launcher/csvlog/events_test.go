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
