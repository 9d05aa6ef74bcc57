package launcher

import (
	"bufio"
	"strings"
	"testing"
)

// Every task's output from a host (logs.sh) printed as the console does:
// what a login shell printed first is dropped, each file's lines get its
// task's prefix, a task's line that looks like a marker stays text, a
// line longer than the console's is cut.
func TestHostLogsLines(t *testing.T) {
	long := strings.Repeat("x", outMaxLine+10)
	in := "Welcome!\n" + logsMarker + "\n" + logMarker + "worker-0.out\n|1\n|@@tfhive-log ps-0.out\n|\n" +
		logMarker + "worker-0.err\n|oops\r\n" + logMarker + "ps-0.out\n|" + long + "\n|last"
	var out strings.Builder
	w := bufio.NewWriter(&out)
	p := &linePrinter{w: w, colors: map[string]int{}}
	found, none, err := p.copyHost(strings.NewReader(in), "gpu01")
	if !found || none != "" || err != nil {
		t.Fatalf("found %v, none %q, err %v", found, none, err)
	}
	want := "[worker:0 gpu01] 1\n[worker:0 gpu01] @@tfhive-log ps-0.out\n[worker:0 gpu01]\n[worker:0 gpu01] oops\n" +
		"[ps:0 gpu01] " + long[:outMaxLine-1] + "\n[ps:0 gpu01] xxxxxxxxxxx\n[ps:0 gpu01] last\n"
	if got := out.String(); got != want {
		for i, line := range strings.Split(got, "\n") {
			t.Errorf("line %d: %d bytes: %.60q", i, len(line), line)
		}
	}

	out.Reset()
	found, none, _ = p.copyHost(strings.NewReader("motd\n"+noneMarker+"no trace of run r1 in /home/u/.tfhive/runs/r1\n"), "gpu02")
	if found || none != "no trace of run r1 in /home/u/.tfhive/runs/r1" || out.Len() != 0 {
		t.Errorf("found %v, none %q, printed %q", found, none, out.String())
	}
}
