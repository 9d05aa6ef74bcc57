package launcher

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/tfhive/tfhive/launcher/record"
	"github.com/tfhive/tfhive/launcher/rundir"
)

// metrics.csv keeps each value with its time: every one of the first
// seriesDense, then every 2nd, every 4th…, and the last when the output
// ends; values past seriesMaxValue bytes cut, fields with commas quoted.
func TestSeriesThinsAndKeepsTheLast(t *testing.T) {
	path := filepath.Join(t.TempDir(), rundir.Metrics)
	b := newSeriesBook(path, false)
	tc := newTaskCapture(mustCaptures(t, "loss=loss ([0-9]+)", "tag=tag (.*)"), b.task("worker:0", 2))
	const n = 5000
	for i := 1; i <= n; i++ {
		tc.write(0, []byte("loss "+strconv.Itoa(i)+"\n"))
	}
	tc.write(1, []byte("tag a,\"b\" "+strings.Repeat("x", 100)+"\n"))
	tc.flush()
	if err := b.close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if lines[0] != "time,task,name,value" {
		t.Fatalf("header %q", lines[0])
	}
	var losses []int
	for _, l := range lines[1:] {
		f := strings.SplitN(l, ",", 4)
		if f[1] != "worker:0" || len(f[0]) != len("2006-01-02T15:04:05.000Z") {
			t.Fatalf("row %q", l)
		}
		if f[2] == "loss" {
			v, _ := strconv.Atoi(f[3])
			losses = append(losses, v)
		}
	}
	// 1000 at stride 1 (1…1000), 1000 at 2 (1001…2999), 500 at 4
	// (3001…4997), and the last.
	if len(losses) != 2501 || losses[999] != 1000 || losses[1000] != 1001 || losses[1001] != 1003 ||
		losses[2000] != 3001 || losses[2001] != 3005 || losses[2500] != n {
		t.Errorf("%d rows of loss: %v … %v", len(losses), losses[:3], losses[len(losses)-3:])
	}
	tag := lines[len(lines)-2] // before the last loss, written at the end
	if want := `,worker:0,tag,"a,""b"" ` + strings.Repeat("x", seriesMaxValue-6) + `"`; !strings.HasSuffix(tag, want) {
		t.Errorf("tag row %q, want it to end %q", tag, want)
	}
}

// At most timelineMaxRows events, then one saying more were not.
func TestTimelineBounded(t *testing.T) {
	path := filepath.Join(t.TempDir(), rundir.Events)
	tl := newTimeline(path, false)
	for range timelineMaxRows + 5 {
		tl.add("worker:0", "h1", record.EventStart, "line one\nline two")
	}
	tl.close()
	tl.add("worker:0", "h1", record.EventExit, "after close")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(lines) != timelineMaxRows+2 || !strings.HasSuffix(lines[1], ",worker:0,h1,start,line one") ||
		!strings.HasSuffix(lines[len(lines)-1], ",,,truncated,more events were not recorded") {
		t.Errorf("%d lines: %q … %q", len(lines), lines[1], lines[len(lines)-1])
	}
}
