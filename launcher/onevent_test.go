package launcher

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/tfhive/tfhive/launcher/rundir"
	"github.com/tfhive/tfhive/schedule/scheduletest"
)

// Options.OnEvent is told every row of events.csv, as written: the one
// stream --notify delivers from (rows other features add, idle or hang,
// come the same way).
func TestOnEventSeesTheTimeline(t *testing.T) {
	f := newFakeRun(t, scheduletest.TF("worker:0@h1", "worker:1@h2"))
	var mu sync.Mutex
	var rows []string
	f.o.OnEvent = func(task, host, event, detail string) {
		mu.Lock()
		rows = append(rows, strings.Join([]string{task, host, event, detail}, ","))
		mu.Unlock()
	}
	f.host("h1").script("worker:0", runs(exits(0, "")))
	f.host("h2").script("worker:1", runs(exits(3, "")))
	f.mustRun(context.Background())
	data, err := os.ReadFile(filepath.Join(f.o.LogDir, rundir.Events))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")[1:]
	if len(lines) != len(rows) || len(rows) < 4 {
		t.Fatalf("OnEvent was told %q, events.csv has %q", rows, lines)
	}
	for i, line := range lines {
		// time,task,host,event,detail: all but the time.
		if _, rest, _ := strings.Cut(line, ","); rest != rows[i] {
			t.Errorf("row %d: told %q, events.csv has %q", i, rows[i], rest)
		}
	}
	if !strings.Contains(strings.Join(rows, "\n"), "worker:1,h2,exit,code 3") {
		t.Errorf("no exit row for worker:1: %q", rows)
	}
}
