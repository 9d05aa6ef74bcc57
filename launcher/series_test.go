package launcher

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/tfhive/tfhive/launcher/csvlog"
	"github.com/tfhive/tfhive/launcher/rundir"
)

// metrics.csv keeps each value with its time: every one of the first
// csvlog.MetricsDense, then every 2nd, every 4th…, and the last when the output
// ends; values past csvlog.MetricsMaxValue bytes cut, fields with commas quoted.
func TestSeriesThinsAndKeepsTheLast(t *testing.T) {
	path := filepath.Join(t.TempDir(), rundir.Metrics)
	b := csvlog.NewMetrics(path, false)
	tc := newTaskCapture(mustCaptures(t, "loss=loss ([0-9]+)", "tag=tag (.*)"), b.Task("worker:0", 2))
	const n = 5000
	for i := 1; i <= n; i++ {
		tc.write(0, []byte("loss "+strconv.Itoa(i)+"\n"))
	}
	tc.write(1, []byte("tag a,\"b\" "+strings.Repeat("x", 100)+"\n"))
	tc.flush()
	if err := b.Close(); err != nil {
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
	if want := `,worker:0,tag,"a,""b"" ` + strings.Repeat("x", csvlog.MetricsMaxValue-6) + `"`; !strings.HasSuffix(tag, want) {
		t.Errorf("tag row %q, want it to end %q", tag, want)
	}
}

// A step group is not the value: each value's row has a step row before
// it, the task's output's end writes the last of both, and a capture
// whose one group is step records it as its value.
func TestSeriesStepGroup(t *testing.T) {
	path := filepath.Join(t.TempDir(), rundir.Metrics)
	b := csvlog.NewMetrics(path, false)
	c := mustCaptures(t, `loss=step (?P<step>[0-9]+) loss ([0-9.]+)`, `step=(?P<step>[0-9]+)/`)
	tc := newTaskCapture(c, b.Task("worker:0", 2*len(c.List)))
	tc.write(0, []byte("step 1 loss 0.5\nstep 2 loss 0.25\n"))
	tc.write(0, []byte("9/ step 3 loss 0.125\n"))
	tc.flush()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if g := tc.metrics(); g["loss"] != "0.125" || g["step"] != "9" {
		t.Errorf("the summary's values %v, want loss 0.125 and step 9", g)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var rows []string
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n")[1:] {
		rows = append(rows, strings.SplitN(l, ",", 3)[2])
	}
	// The first Write's last match (step 2), then the second's.
	want := "step,2 loss,0.25 step,3 loss,0.125 step,9"
	if got := strings.Join(rows, " "); got != want {
		t.Errorf("metrics.csv's rows %q, want %q", got, want)
	}
}
