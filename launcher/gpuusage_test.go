package launcher

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tfhive/tfhive/launcher/rundir"
	"github.com/tfhive/tfhive/launcher/supervisor"
)

func TestParseGPURow(t *testing.T) {
	for line, want := range map[string]*gpuRow{
		"0, GPU-abc, 37, 1024":            {index: 0, util: 37, mem: 1024},
		"3, GPU-x, 100, 0":                {index: 3, util: 100},
		"1, GPU-m, [N/A], 512":            nil,
		"No devices were found":           nil,
		"1, GPU-m, 5, 6, 7":               nil,
		"-1, GPU-m, 5, 6":                 nil,
		"Failed to initialize NVML: x, y": nil,
	} {
		got, ok := parseGPURow(line)
		if ok != (want != nil) || (ok && got != *want) {
			t.Errorf("%q: %+v %v, want %+v", line, got, ok, want)
		}
	}
}

func TestUsageStats(t *testing.T) {
	var util, mem []float64
	for i := 1; i <= 20; i++ {
		util = append(util, float64(i*5)) // 5 … 100
		mem = append(mem, float64(i))
	}
	u := usageOf(util, mem)
	if u.Samples != 20 || u.UtilMean != 52.5 || u.UtilP95 != 95 || u.UtilPeak != 100 || u.MemMean != 10.5 || u.MemP95 != 19 || u.MemPeak != 20 {
		t.Errorf("%+v", u)
	}
	if u := usageOf([]float64{7}, []float64{3}); u.UtilMean != 7 || u.UtilP95 != 7 || u.UtilPeak != 7 || u.MemPeak != 3 {
		t.Errorf("one sample: %+v", u)
	}
	if usageOf(nil, nil) != nil {
		t.Error("no samples gave usage")
	}
}

func TestIdleRule(t *testing.T) {
	t0 := time.Unix(1000, 0)
	var it idleTrack
	var warns []string
	feed := func(sec int, mean float64) {
		if w := it.add(t0.Add(time.Duration(sec)*time.Second), mean, time.Minute); w != "" {
			warns = append(warns, w)
		}
	}
	// Idle for 50 s, then busy: too short.
	for s := 0; s <= 50; s += 10 {
		feed(s, 1)
	}
	feed(60, 80)
	if len(warns) != 0 {
		t.Fatalf("warned after 50 s: %q", warns)
	}
	// Idle from 70 s on: warned once, at 130 s.
	for s := 70; s <= 250; s += 10 {
		feed(s, 2)
	}
	if len(warns) != 1 || warns[0] != "GPU idle (2%) for 1m" {
		t.Fatalf("warnings %q", warns)
	}
	if it.note != "GPU idle (2%) for 3m" {
		t.Errorf("note %q, want the whole stretch", it.note)
	}
	// Busy, then idle again: no second warning, the note stays.
	feed(260, 50)
	for s := 270; s <= 400; s += 10 {
		feed(s, 0)
	}
	if len(warns) != 1 || it.note != "GPU idle (2%) for 3m" {
		t.Errorf("warnings %q, note %q", warns, it.note)
	}
	// 5% is not idle.
	var busy idleTrack
	for s := 0; s <= 120; s += 10 {
		if w := busy.add(t0.Add(time.Duration(s)*time.Second), 5, time.Minute); w != "" {
			t.Errorf("5%% warned: %q", w)
		}
	}
}

// A host's sampler output: a greeting before the first marker is not a
// sample; each task sees its own GPUs; the CSV has every row.
func TestSampleLines(t *testing.T) {
	dir := t.TempDir()
	var said []string
	b := newUsageBook(filepath.Join(dir, rundir.GPUUsage), 0, func(i int, line string) { said = append(said, b2s(i)+line) })
	b.addTask(0, "worker:0", "h1", []int{0, 1})
	b.addTask(1, "worker:1", "h1", []int{2})
	w := &sampleLines{host: "h1", book: b}
	out := "Welcome\n1, G, 99, 9\n" + supervisor.SampleMarker + "\n0, G0, 10, 100\n1, G1, 30, 300\n2, G2, 1, 5\n" +
		supervisor.SampleMarker + "\r\n0, G0, 50, 200\n1, G1, 70, 100\n2, G2, 3, 7\n"
	for _, c := range bytes.SplitAfter([]byte(out), []byte("G")) {
		w.Write(c)
	}
	w.end()
	if err := b.close(); err != nil {
		t.Fatal(err)
	}
	u0, u1 := b.usage(0), b.usage(1)
	if u0.Samples != 4 || u0.UtilMean != 40 || u0.UtilPeak != 70 || u0.MemPeak != 300 {
		t.Errorf("worker:0 %+v", u0)
	}
	if u1.Samples != 2 || u1.UtilMean != 2 || u1.MemPeak != 7 || u1.Idle == "" {
		t.Errorf("worker:1 %+v", u1)
	}
	if len(said) != 1 || !strings.HasPrefix(said[0], "1 GPU idle (2%) for ") {
		t.Errorf("said %q", said)
	}
	csv, _ := os.ReadFile(filepath.Join(dir, rundir.GPUUsage))
	lines := strings.Split(strings.TrimSpace(string(csv)), "\n")
	if len(lines) != 7 || lines[0] != "time,task,host,gpu,util_pct,mem_mib" || !strings.HasSuffix(lines[6], ",worker:1,h1,2,3,7") {
		t.Errorf("csv:\n%s", csv)
	}

	// A run started again after a lost host adds its samples, under the
	// one header.
	again := newUsageBook(filepath.Join(dir, rundir.GPUUsage), 0, nil)
	again.csv.appends = true
	again.addTask(0, "worker:0", "h2", []int{0})
	w = &sampleLines{host: "h2", book: again}
	w.Write([]byte(supervisor.SampleMarker + "\n0, G0, 5, 6\n"))
	w.end()
	again.close()
	csv, _ = os.ReadFile(filepath.Join(dir, rundir.GPUUsage))
	lines = strings.Split(strings.TrimSpace(string(csv)), "\n")
	if len(lines) != 8 || strings.Count(string(csv), "time,") != 1 || !strings.HasSuffix(lines[7], ",worker:0,h2,0,5,6") {
		t.Errorf("csv after a relaunch:\n%s", csv)
	}
}

func b2s(i int) string { return string(rune('0'+i)) + " " }
